package report

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/results/aggregate"
)

// TestLaTeXColumnFigures compiles a two-column paper (article,
// twocolumn) that includes a q-fig3-like figure (one-or-all, FCFS and
// MSF, a bound and a truncated point) and a k-fig4-like one (FCFS with
// Kill-Smart's K × ν families) at \columnwidth, with pdflatex: the
// figures must compile in, and their text — 8 pt ticks and legend, 9 pt
// axis labels at 3.3 in (237.6 pt) — must stay between 7 and 9.5 pt at
// the column's width. Skipped without pdflatex (Debian:
// texlive-latex-base, about 2 minutes to install, so CI does not).
func TestLaTeXColumnFigures(t *testing.T) {
	pdflatex, err := exec.LookPath("pdflatex")
	if err != nil {
		t.Skip("pdflatex not installed (apt-get install texlive-latex-base)")
	}
	dir := t.TempDir()
	q, err := Render(Campaign{Points: limitPoints()})
	if err != nil {
		t.Fatal(err)
	}
	k, err := Render(Campaign{Points: killSmartPoints()})
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"qfig3.pdf": q["mean_response.pdf"], "kfig4.pdf": k["mean_response.pdf"]} {
		if b == nil {
			t.Fatalf("no mean_response.pdf for %s", name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tex := `\documentclass[twocolumn]{article}
\usepackage{graphicx}
\begin{document}
\typeout{COLUMNWIDTH=\the\columnwidth}
Mean response time against the arrival rate.
\begin{figure}\includegraphics[width=\columnwidth]{qfig3.pdf}\caption{One-or-all, k = 32.}\end{figure}
\begin{figure}\includegraphics[width=\columnwidth]{kfig4.pdf}\caption{Kill-Smart against FCFS.}\end{figure}
\end{document}
`
	if err := os.WriteFile(filepath.Join(dir, "paper.tex"), []byte(tex), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pdflatex, "-interaction=nonstopmode", "-halt-on-error", "paper.tex")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pdflatex: %v\n%s", err, out)
	}
	log := string(out)
	if strings.Contains(log, "Overfull \\hbox") {
		t.Errorf("a figure overflows the column:\n%s", log)
	}
	m := regexp.MustCompile(`COLUMNWIDTH=([0-9.]+)pt`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no column width in the log:\n%s", log)
	}
	col, _ := strconv.ParseFloat(m[1], 64)
	scale := col / 237.6 // the figures are 3.3 in = 237.6 pt wide
	small, large := 8*scale, 9*scale
	t.Logf("column %.1f pt: figure text %.2f–%.2f pt", col, small, large)
	if small < 7 || large > 9.5 {
		t.Errorf("at a %.1f pt column the figures' text is %.2f–%.2f pt, want within 7–9.5", col, small, large)
	}
	if fi, err := os.Stat(filepath.Join(dir, "paper.pdf")); err != nil || fi.Size() == 0 {
		t.Errorf("no paper.pdf: %v", err)
	}
}

// killSmartPoints are k-fig4-like points: FCFS and Kill-Smart K ∈ {7, 21}
// × ν ∈ {1, 100} at four rates, E[T] rising towards λ = 2; FCFS unstable
// at the last rate.
func killSmartPoints() []aggregate.Point {
	var pts []aggregate.Point
	add := func(pol string, params map[string]any, lam, mean float64, unstable bool) {
		p := aggregate.Point{Workload: "killsmart-one-or-all", Servers: 2048, Policy: pol, Params: params,
			Axes: map[string]any{"arrival_rate": lam}, ArrivalRate: lam, Load: lam / 2, Replications: 3, N: 3, Verdict: "stable",
			Metrics: []aggregate.Metric{aggregate.NewMetric(aggregate.MetricDesc{Name: "mean_response", Base: "mean_response", Class: -1}, mean, 0.1*mean, 3)}}
		if unstable {
			p.Verdict, p.NUnstable = "unstable", 3
		}
		pts = append(pts, p)
	}
	for _, lam := range []float64{0.2, 1, 1.4, 1.8} {
		add("fcfs", map[string]any{}, lam, 3/(1-lam/2), lam == 1.8)
		for _, K := range []float64{7, 21} {
			for _, nu := range []float64{1, 100} {
				add("killsmart", map[string]any{"K": K, "nu": nu}, lam, (2+K/nu/10)/(1-lam/2.1), false)
			}
		}
	}
	return pts
}
