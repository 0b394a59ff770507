package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/internal/pyfind"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/results/aggregate"
)

// The page a figure file must fit: 6.9 in of text width, about 9 in of
// text height (in points).
const pageWidthPt, pageHeightPt = 6.9 * 72, 9 * 72

var (
	svgWH    = regexp.MustCompile(`<svg width="([0-9.]+)pt" height="([0-9.]+)pt"`)
	mediaBox = regexp.MustCompile(`/MediaBox\s*\[\s*0\s+0\s+([0-9.]+)\s+([0-9.]+)\s*\]`)
	figureID = regexp.MustCompile(`<figure id="fig-([^"]+)"`)
	partRE   = regexp.MustCompile(`^(.*)-[0-9]+$`)
)

// checkSize checks the width and height in points that re finds in b.
func checkSize(t *testing.T, name string, re *regexp.Regexp, b []byte) {
	t.Helper()
	m := re.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no size", name)
	}
	w, _ := strconv.ParseFloat(string(m[1]), 64)
	h, _ := strconv.ParseFloat(string(m[2]), 64)
	checkFits(t, name, w, h)
}

// checkFits fails the test for a size beyond the page's.
func checkFits(t *testing.T, name string, w, h float64) {
	t.Helper()
	if w > pageWidthPt+0.01 || h > pageHeightPt+0.01 {
		t.Errorf("%s is %.3g × %.3g in: more than a page's 6.9 × 9 in", name, w/72, h/72)
	}
}

// checkFigureFiles checks every figure of a report: its SVG, PDF and PNG
// (300 dpi) at most a page, and the index's references: each figure's
// PDF, SVG, PNG, CSV and script, and no figure file the index does not
// show. It returns the index's figures.
func checkFigureFiles(t *testing.T, files map[string][]byte) []string {
	t.Helper()
	idx := string(files["index.html"])
	var figs []string
	for _, m := range figureID.FindAllStringSubmatch(idx, -1) {
		figs = append(figs, m[1])
	}
	for _, fig := range figs {
		for _, ext := range []string{".pdf", ".svg", ".png", ".csv", ".py"} {
			if files[fig+ext] == nil && files[fig+ext+".gz"] == nil {
				t.Errorf("index.html shows %s: no %s%s", fig, fig, ext)
			}
			if !strings.Contains(idx, `href="`+fig+ext) {
				t.Errorf("index.html does not link %s%s", fig, ext)
			}
		}
	}
	for name, b := range files {
		base, ok := strings.CutSuffix(name, ".svg")
		if !ok {
			continue
		}
		if !slices.Contains(figs, base) {
			t.Errorf("%s: a figure index.html does not show", name)
		}
		checkSize(t, name, svgWH, b)
		pdf := base + ".pdf"
		checkSize(t, pdf, mediaBox, files[pdf])
		cfg, err := png.DecodeConfig(bytes.NewReader(files[base+".png"]))
		if err != nil {
			t.Fatalf("%s.png: %v", base, err)
		}
		checkFits(t, base+".png", float64(cfg.Width)/pngDPI*72, float64(cfg.Height)/pngDPI*72)
	}
	return figs
}

// panelsOf are figure fig's panels as its CSV has them, in order.
func panelsOf(t *testing.T, files map[string][]byte, fig string) []string {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(files[fig+".csv"])).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("%s.csv: %v (%d rows)", fig, err, len(rows))
	}
	var ps []string
	for _, r := range rows[1:] {
		if !slices.Contains(ps, r[0]) {
			ps = append(ps, r[0])
		}
	}
	return ps
}

// checkPanels checks that figure base's files (base, or base-1, base-2, …
// when split) hold each of want's panels exactly once, in order, each
// drawn (its title in the SVG), at most maxPanels a file, in as few files
// as can be. It returns the files.
func checkPanels(t *testing.T, files map[string][]byte, figs []string, base string, want []string) []string {
	t.Helper()
	var parts, got []string
	for _, fig := range figs {
		if m := partRE.FindStringSubmatch(fig); fig == base || m != nil && m[1] == base {
			parts = append(parts, fig)
		}
	}
	for _, fig := range parts {
		ps := panelsOf(t, files, fig)
		if len(ps) > maxPanels {
			t.Errorf("%s: %d panels", fig, len(ps))
		}
		for _, p := range ps {
			if !strings.Contains(string(files[fig+".svg"]), "<title>"+p+"</title>") {
				t.Errorf("%s.svg: no panel %q", fig, p)
			}
		}
		got = append(got, ps...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: panels %q in %q, want %q, each once", base, got, parts, want)
	}
	if n := (len(want) + maxPanels - 1) / maxPanels; len(parts) != n {
		t.Errorf("%s: %d files %q, want %d", base, len(parts), parts, n)
	}
	return parts
}

// classReport renders FCFS on a workload of n classes (needs 1–4 of 4
// servers): its per-class figures have a panel per class.
func classReport(t *testing.T, n int) (map[string][]byte, []string) {
	t.Helper()
	spec := workload.Spec{Name: fmt.Sprintf("w%d", n), Servers: 4}
	var want []string
	for c := 0; c < n; c++ {
		spec.Classes = append(spec.Classes, workload.ClassSpec{Name: fmt.Sprintf("c%d", c), Need: 1 + c%4, Share: 1, Service: workload.Exp(1)})
		want = append(want, fmt.Sprintf("class %d: c%d (need %d)", c, c, 1+c%4))
	}
	files, err := Render(simulateSpec(t, spec, []policyRun{fcfsRun()}, []float64{0.2, 0.4}, 2, 2000))
	if err != nil {
		t.Fatal(err)
	}
	return files, want
}

// TestFiguresFitPage: every figure file of a report whose per-class
// figures have 1 to 40 panels is at most a page (6.9 × 9 in) as SVG, PDF
// and PNG, a figure of more than maxPanels panels is split into files
// name-1, name-2, … that hold every panel once, and index.html shows and
// links every file. A grid of 10 panels was 9.2 in wide and of 40 13.8 ×
// 13.3 in; a full 3 × 3 grid with its legend in a strip on the right
// 8 in wide.
func TestFiguresFitPage(t *testing.T) {
	for _, n := range []int{1, 2, 3, 9, 10, 16, 25, 40} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			files, want := classReport(t, n)
			figs := checkFigureFiles(t, files)
			parts := checkPanels(t, files, figs, "class_mean_response", want)
			if n > maxPanels && files["class_mean_response.svg"] != nil {
				t.Errorf("class_mean_response.svg beside its parts %q", parts)
			}
		})
	}
}

// TestHeatFitsPage: a heat map of 3 to 25 panels (a policy each) is at
// most a page in every file, split as line plots are; its colour key was
// in a strip right of the grid, 8 in wide for three panels.
func TestHeatFitsPage(t *testing.T) {
	for _, n := range []int{3, 25} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			files, err := Render(bigCampaign(n, 8, 4))
			if err != nil {
				t.Fatal(err)
			}
			figs := checkFigureFiles(t, files)
			var want []string
			for i := 0; i < n; i++ {
				want = append(want, fmt.Sprintf("pol%d", i))
			}
			checkPanels(t, files, figs, "heat_mean_response", want)
		})
	}
}

// TestPhasesFitPage: MSFQ's phase figure of n series (a row of a panel
// per series for its one statistic, that row 18.4 in wide for 8 series)
// is laid out in rows of 3, split past maxPanels, every file at most a
// page, every series' panel in one.
func TestPhasesFitPage(t *testing.T) {
	for _, n := range []int{3, 8, 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var pts []aggregate.Point
			var want []string
			for th := 0; th < n; th++ {
				params := map[string]any{"threshold": th}
				for _, lam := range []float64{1, 2, 3} {
					ms := []aggregate.Metric{aggregate.NewMetric(aggregate.MetricDesc{Name: "mean_response", Class: -1, Base: "mean_response"}, lam+float64(th), 0.1, 3)}
					for z := 1; z <= 2; z++ {
						col := fmt.Sprintf("counter_phase%d_mean", z)
						ms = append(ms, aggregate.NewMetric(aggregate.MetricDesc{Name: col, Class: -1, Base: col}, float64(z)*lam+float64(th), 0.1, 3))
					}
					pts = append(pts, aggregate.Point{Point: fmt.Sprint(th, lam), Workload: "w", Servers: 4, Policy: "msfq", Params: params,
						Axes: map[string]any{"arrival_rate": lam, "threshold": th}, ArrivalRate: lam, Load: lam / 4, Replications: 3, N: 3,
						Verdict: "stable", Metrics: ms})
				}
				want = append(want, fmt.Sprintf("msfq threshold=%d: phase mean", th))
			}
			files, err := Render(Campaign{Points: pts})
			if err != nil {
				t.Fatal(err)
			}
			checkPanels(t, files, checkFigureFiles(t, files), "msfq_phases", want)
		})
	}
}

// TestEditableFitPage runs the matplotlib scripts of split figures (a
// per-class figure of 16 and 40 panels, a heat map of 25): each draws
// at most a page, and together they draw every panel once.
func TestEditableFitPage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 7 scripts of 8 to 12 panels")
	}
	python := pyfind.With("matplotlib")
	if python == "" {
		t.Skip("no python3 with matplotlib (apt-get install python3-matplotlib; or set MSJFARM_PYTHON): the scripts were not run")
	}
	type report struct {
		files map[string][]byte
		base  string
		want  []string
	}
	var reports []report
	for _, n := range []int{16, 40} {
		files, want := classReport(t, n)
		reports = append(reports, report{files, "class_mean_response", want})
	}
	heat, err := Render(bigCampaign(25, 8, 4))
	if err != nil {
		t.Fatal(err)
	}
	var pols []string
	for i := 0; i < 25; i++ {
		pols = append(pols, fmt.Sprintf("pol%d", i))
	}
	reports = append(reports, report{heat, "heat_mean_response", pols})
	driver := `import runpy, sys
for fig in sys.argv[2:]:
    sys.argv = [fig + ".py", "--out", fig + ".mpl.pdf", "--dump", fig + ".json"]
    runpy.run_path(sys.argv[0], run_name="__main__")
`
	for _, r := range reports {
		dir := t.TempDir()
		if err := WriteFiles(dir, r.files); err != nil {
			t.Fatal(err)
		}
		parts := checkPanels(t, r.files, checkFigureFiles(t, r.files), r.base, r.want)
		args := []string{"-c", driver, "--"}
		for _, p := range parts {
			args = append(args, filepath.Join(dir, p))
		}
		if out, err := exec.Command(python, args...).CombinedOutput(); err != nil {
			t.Fatalf("the scripts: %v\n%s", err, out)
		}
		var drawn []string
		for _, p := range parts {
			b, err := os.ReadFile(filepath.Join(dir, p+".mpl.pdf"))
			if err != nil {
				t.Fatal(err)
			}
			checkSize(t, p+".mpl.pdf", mediaBox, b)
			if b, err = os.ReadFile(filepath.Join(dir, p+".json")); err != nil {
				t.Fatal(err)
			}
			var d []struct{ Panel string }
			if err := json.Unmarshal(bytes.ReplaceAll(b, []byte("NaN"), []byte("null")), &d); err != nil {
				t.Fatal(err)
			}
			var ps []string // a line per series: each panel once
			for _, x := range d {
				if !slices.Contains(ps, x.Panel) {
					ps = append(ps, x.Panel)
				}
			}
			drawn = append(drawn, ps...)
		}
		if !slices.Equal(drawn, r.want) {
			t.Errorf("%s: the scripts drew panels %q, want %q", r.base, drawn, r.want)
		}
	}
}
