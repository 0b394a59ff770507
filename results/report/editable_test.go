package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/internal/campaigntest"
	"github.com/msjfarm/msjfarm/internal/pyfind"
	"github.com/msjfarm/msjfarm/results/aggregate"
)

// allFigures runs every figure's script (-tags long: editable_long_test.go)
// instead of one of each kind.
var allFigures = false

// TestEditableFigures renders a real campaign's report (campaigntest.CRN:
// FCFS, MSF and MSFQ, one unstable FCFS point) and checks that every figure
// is at print size (3.3 in wide, 8–9 pt text) with a page-width PDF, has
// its tidy CSV and matplotlib script beside it, and — where Python with
// matplotlib is installed (Debian: python3-matplotlib) — runs every script
// and compares the lines matplotlib drew with the CSV's estimates: the same
// series, x and y in every panel (a lower bound is not on a line).
//
// Complexity 45: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestEditableFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 90 replications")
	}
	pts := campaigntest.Points(t, campaigntest.CRN)
	files, err := Render(Campaign{Points: pts})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	var figs []string
	for name := range files {
		if base, ok := strings.CutSuffix(name, ".png"); ok {
			figs = append(figs, base)
		}
	}
	sort.Strings(figs)
	if len(figs) < 5 {
		t.Fatalf("%d figures", len(figs))
	}
	for _, fig := range figs {
		if files[fig+".csv"] == nil || files[fig+".py"] == nil {
			t.Errorf("%s: no %s.csv or %s.py beside it", fig, fig, fig)
		}
	}
	// Print size: a single figure is 3.3 in (237.6 pt) wide, its SVG's
	// user unit is the point (viewBox = width in pt), so its font sizes are
	// points at column width: 8 (ticks, legend) and 9 (axis labels) only.
	sizeRE := regexp.MustCompile(`font-size:([0-9.]+)px`)
	for _, fig := range figs {
		svg := string(files[fig+".svg"])
		if !strings.HasPrefix(fig, "class_") && !strings.HasPrefix(fig, "msfq_phases") &&
			!strings.Contains(svg, `<svg width="237.6pt"`) {
			t.Errorf("%s.svg is not 3.3 in wide: %.80q", fig, svg[strings.Index(svg, "<svg"):])
		}
		for _, m := range sizeRE.FindAllStringSubmatch(svg, -1) {
			if m[1] != "8" && m[1] != "9" {
				t.Errorf("%s.svg: a %s pt font", fig, m[1])
			}
		}
		if files[fig+"_page.pdf"] == nil && !strings.HasPrefix(fig, "class_") && !strings.HasPrefix(fig, "msfq_phases") {
			t.Errorf("%s: no page-width PDF", fig)
		}
	}

	// The bound is in the data, as a lower bound, not an estimate.
	rows, err := csv.NewReader(bytes.NewReader(files["mean_response.csv"])).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	bounds := 0
	for _, r := range rows[1:] {
		if r[1] == "fcfs" && r[3] == "5" {
			bounds++
			if r[7] != aggregate.ReadLowerBound || r[5] != "" {
				t.Errorf("mean_response.csv fcfs λ=5: %v, want a lower bound without interval", r)
			}
		}
	}
	if bounds != 1 {
		t.Errorf("mean_response.csv: %d rows for fcfs λ=5", bounds)
	}

	python := pyfind.With("matplotlib")
	if !allFigures {
		// One figure of each kind (a log axis with a bound, panels, a
		// zero line and band, a bounded axis, a phase grid); -tags long
		// runs them all.
		kinds := []string{"mean_response", "class_mean_response", "compare_mean_response", "jain", "msfq_phases"}
		figs = slices.DeleteFunc(figs, func(f string) bool { return !slices.Contains(kinds, f) })
	}
	if python == "" {
		t.Skip("no python3 with matplotlib (apt-get install python3-matplotlib; or set MSJFARM_PYTHON): the scripts were not run")
	}
	// Every script runs as its own __main__ (runpy, as "python3 fig.py"
	// would), in one interpreter so that matplotlib is imported once.
	driver := `import runpy, sys
for fig in sys.argv[2:]:
    sys.argv = [fig + ".py", "--out", fig + ".mpl.pdf", "--dump", fig + ".json"]
    runpy.run_path(sys.argv[0], run_name="__main__")
`
	args := []string{"-c", driver, "--"}
	for _, fig := range figs {
		args = append(args, filepath.Join(dir, fig))
	}
	if out, err := exec.Command(python, args...).CombinedOutput(); err != nil {
		t.Fatalf("the scripts: %v\n%s", err, out)
	}
	for _, fig := range figs {
		dump := filepath.Join(dir, fig+".json")
		if st, err := os.Stat(filepath.Join(dir, fig+".mpl.pdf")); err != nil || st.Size() == 0 {
			t.Errorf("%s.py drew no PDF", fig)
		}
		var drawn []struct {
			Panel, Series string
			X, Y          []float64
		}
		b, err := os.ReadFile(dump)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &drawn); err != nil {
			t.Fatal(err)
		}
		// The CSV's estimates, by panel and series, in x order.
		rows, err := csv.NewReader(bytes.NewReader(files[fig+".csv"])).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][][2]float64{}
		for _, r := range rows[1:] {
			if r[7] != aggregate.ReadEstimate {
				continue
			}
			x, _ := strconv.ParseFloat(r[3], 64)
			y, _ := strconv.ParseFloat(r[4], 64)
			want[r[0]+"\x00"+r[1]] = append(want[r[0]+"\x00"+r[1]], [2]float64{x, y})
		}
		if len(drawn) != len(want) {
			t.Errorf("%s: matplotlib drew %d lines, the CSV has %d series", fig, len(drawn), len(want))
		}
		for _, d := range drawn {
			w := want[d.Panel+"\x00"+d.Series]
			sort.Slice(w, func(i, j int) bool { return w[i][0] < w[j][0] })
			if len(w) != len(d.X) {
				t.Errorf("%s %s: %d points drawn, %d in the CSV", fig, d.Series, len(d.X), len(w))
				continue
			}
			for i := range w {
				if math.Abs(d.X[i]-w[i][0]) > 1e-12*math.Abs(w[i][0]) || math.Abs(d.Y[i]-w[i][1]) > 1e-12*math.Abs(w[i][1]) {
					t.Errorf("%s %s point %d: drew (%g, %g), CSV (%g, %g)", fig, d.Series, i, d.X[i], d.Y[i], w[i][0], w[i][1])
				}
			}
		}
	}
}

// TestEditableScalesPerPanel: the script's axes are log or linear panel by
// panel, as the Go figure's are. Panel "a" spans three decades in y
// (1 … 1000: yRange goes log at a ratio of 100) on a linear arrival-rate
// axis; panel "b" spans 1 … 1.5 in y (linear) on a servers axis
// k = 32, 128, 256, 2048 (log x: logXAxis). The Go decision is read off
// each drawn panel (its tick markers); the script's from what it set
// (its SCALES, and with matplotlib, the axes it drew).
func TestEditableScalesPerPanel(t *testing.T) {
	mk := func(xs, ys []float64) curve {
		c := curve{label: "p", style: 0}
		for i := range xs {
			c.add(xs[i], ys[i], ys[i]/20, false)
		}
		return c
	}
	panels := []panelData{
		{title: "a", cs: []curve{mk([]float64{0.2, 0.4, 0.6, 0.8}, []float64{1, 10, 100, 1000})}},
		{title: "b", cs: []curve{mk([]float64{32, 128, 256, 2048}, []float64{1, 1.2, 1.4, 1.5})}},
	}
	goScale := map[string]panelScale{}
	for _, pd := range panels {
		p := newPlot(pd.title, "x", "y", pd.cs, true)
		_, logY := p.Y.Tick.Marker.(logTicks)
		st, swept := p.X.Tick.Marker.(*sweptTicks)
		_, logX := p.X.Tick.Marker.(logTicks)
		goScale[pd.title] = panelScale{LogX: logX || swept && st.log, LogY: logY}
	}
	if goScale["a"] != (panelScale{LogY: true}) || goScale["b"] != (panelScale{LogX: true}) {
		t.Fatalf("the Go panels: %+v; the test's data no longer exercise a log and a linear panel", goScale)
	}
	out := newFiles()
	if err := writeEditable(out, "fig", "x", "y", panels, false); err != nil {
		t.Fatal(err)
	}
	files, err := collect(out)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`SCALES = json.loads\((".*")\)`).FindSubmatch(files["fig.py"])
	if m == nil {
		t.Fatalf("fig.py has no SCALES")
	}
	var text string // a Python string literal that is a JSON string (pyStr)
	var script map[string]panelScale
	if err := json.Unmarshal(m[1], &text); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(text), &script); err != nil {
		t.Fatal(err)
	}
	for p, want := range goScale {
		if script[p] != want {
			t.Errorf("panel %s: the script's scales %+v, the Go figure's %+v", p, script[p], want)
		}
	}
	python := pyfind.With("matplotlib")
	if python == "" {
		t.Skip("no python3 with matplotlib (apt-get install python3-matplotlib; or set MSJFARM_PYTHON): the script was not run")
	}
	dir := t.TempDir()
	if err := WriteFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(dir, "fig.json")
	if out, err := exec.Command(python, filepath.Join(dir, "fig.py"), "--out", filepath.Join(dir, "fig.mpl.pdf"), "--dump", dump).CombinedOutput(); err != nil {
		t.Fatalf("fig.py: %v\n%s", err, out)
	}
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	var drawn []struct {
		Panel      string
		LogX, LogY bool
	}
	if err := json.Unmarshal(b, &drawn); err != nil {
		t.Fatal(err)
	}
	if len(drawn) != len(panels) {
		t.Fatalf("matplotlib drew %d lines, want %d", len(drawn), len(panels))
	}
	for _, d := range drawn {
		if got := (panelScale{LogX: d.LogX, LogY: d.LogY}); got != goScale[d.Panel] {
			t.Errorf("panel %s: matplotlib's axes %+v, the Go figure's %+v", d.Panel, got, goScale[d.Panel])
		}
	}
}

// TestScriptQuoting: the matplotlib scripts embed text that comes from the
// sweep (class and workload names in panel titles, axis labels, series
// labels), and each is Python data, never code. A class named
// "\":1}'); import os; os.system('touch …'); _=('" ran its command in
// every class figure's script before (the panel titles were JSON between
// single quotes), when anyone redrew the figure. Here hostile text in every
// field gives scripts whose code is that of plain text's, statement for
// statement (their syntax trees with every string emptied are equal), and
// whose data are the text itself. Any python3 will do: nothing is drawn.
func TestScriptQuoting(t *testing.T) {
	python := pyfind.With("json")
	if python == "" {
		t.Skip("no python3")
	}
	hostile := "\":1}'); import os; os.system('touch pwned'); _=('\" \"\"\" \\ \n\r\u2028 ''' x ☃"
	render := func(text string) map[string][]byte {
		c := curve{label: text, style: 0}
		for i, x := range []float64{0.2, 0.4, 0.6} {
			c.add(x, float64(i+1), 0.1, false)
		}
		out := newFiles()
		if err := writeEditable(out, "fig", text+"x", text+"y", []panelData{{title: text, cs: []curve{c}}, {title: "b", cs: []curve{c}}}, false); err != nil {
			t.Fatal(err)
		}
		if err := writeHeatScript(out, "heat", text+"x", text+"y", text+"m", heatScale{edges: []float64{0, 1, 2}}); err != nil {
			t.Fatal(err)
		}
		files, err := collect(out)
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	// "shape" prints the script's syntax tree with its strings emptied;
	// "data" runs its assignments of text (and only them) and prints them.
	const inspect = `import ast, json, sys
src = open(sys.argv[2]).read()
tree = ast.parse(src)
names = ("NAME", "XLABEL", "YLABEL", "PANELS", "METRIC")
if sys.argv[1] == "shape":
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            n.value = ""
    print(ast.dump(tree))
else:
    env = {"json": json}
    for n in tree.body:
        if not isinstance(n, ast.Assign):
            continue
        targets = [e for t in n.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
        if all(isinstance(e, ast.Name) and e.id in names for e in targets):
            exec(compile(ast.Module([n], []), "x", "exec"), env)
    print(json.dumps({k: env[k] for k in names if k in env}))
`
	run := func(files map[string][]byte, script, what string) string {
		path := filepath.Join(t.TempDir(), script)
		if err := os.WriteFile(path, files[script], 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(python, "-c", inspect, what, path).CombinedOutput()
		if err != nil {
			t.Fatalf("%s (%s): %v\n%s", script, what, err, out)
		}
		return string(out)
	}
	plain, bad := render("plain"), render(hostile)
	for _, script := range []string{"fig.py", "heat.py"} {
		if run(plain, script, "shape") != run(bad, script, "shape") {
			t.Errorf("%s: hostile text changed the script's code:\n%s", script, bad[script])
			continue
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(run(bad, script, "data")), &got); err != nil {
			t.Fatal(err)
		}
		if got["XLABEL"] != hostile+"x" || got["YLABEL"] != hostile+"y" || got["NAME"] != strings.TrimSuffix(script, ".py") {
			t.Errorf("%s: name %q, labels %q, %q", script, got["NAME"], got["XLABEL"], got["YLABEL"])
		}
		if script == "fig.py" && !slices.Equal(anyStrings(got["PANELS"]), []string{hostile, "b"}) {
			t.Errorf("fig.py: panels %q", got["PANELS"])
		}
		if script == "heat.py" && got["METRIC"] != hostile+"m" {
			t.Errorf("heat.py: metric %q", got["METRIC"])
		}
	}
}

func anyStrings(v any) []string {
	var s []string
	l, _ := v.([]any)
	for _, x := range l {
		str, _ := x.(string)
		s = append(s, str)
	}
	return s
}

// A report's files are named after its metrics, and a metric after a
// counter a stored record names: a record no worker wrote (workers refuse
// such names: worker/resultcheck) could name one "../../x". Such a name is
// refused, and the report with it, instead of being written outside the
// report's directory.
func TestReportFileNames(t *testing.T) {
	for _, name := range []string{"../../x.csv", "a/b.py", `a\b.svg`, "..", "", "a\x00.csv"} {
		out := newFiles()
		out.put("mean_response.csv", []byte("x"))
		out.put(name, []byte("x"))
		if _, err := collect(out); err == nil || !strings.Contains(err.Error(), "is not a plain file name") {
			t.Errorf("%q: %v", name, err)
		}
	}
	dir := t.TempDir()
	sink := DirSink(filepath.Join(dir, "report"))
	if err := os.Mkdir(string(sink), 0o755); err != nil {
		t.Fatal(err)
	}
	out := &files{sink: sink}
	out.put("../escaped.csv", []byte("x"))
	if err := out.wait(); err == nil {
		t.Error("a file named ../escaped.csv was accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "escaped.csv")); err == nil {
		t.Error("a file was written outside the report's directory")
	}
}
