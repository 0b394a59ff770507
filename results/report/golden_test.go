package report

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/internal/golden"
	"github.com/msjfarm/msjfarm/results/aggregate"
)

// update rewrites the golden files under testdata/ with what the report
// draws now: go test ./results/report -run Golden -update.
var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// loadSummary reads a campaign's summary.json (as a report ships it) from
// testdata.
func loadSummary(t *testing.T, name string) []aggregate.Point {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var pts []aggregate.Point
	if err := json.Unmarshal(b, &pts); err != nil {
		t.Fatal(err)
	}
	return pts
}

var (
	svgTitle = regexp.MustCompile(`<title>([^<]*)</title>`)
	htmlH2   = regexp.MustCompile(`<h2>([^<]*)</h2>`)
	htmlCap  = regexp.MustCompile(`<figcaption>(.*?) — <a`)
	htmlHead = regexp.MustCompile(`<thead><tr>(.*?)</tr></thead>`)
	htmlRow  = regexp.MustCompile(`<tr[^>]*>((?:<td[^>]*>[^<]*</td>)+)</tr>`)
	htmlTag  = regexp.MustCompile(`<[^>]*>`)
)

// reportDigest is what a reader sees of a report, as text: the page's
// section headings, figure captions and tables (every cell), and per figure its data as
// drawn (name.csv) and every text of its SVG in drawing order (axis
// labels, tick labels, panel titles, legend).
func reportDigest(files map[string][]byte) string {
	var b strings.Builder
	idx := string(files["index.html"])
	for _, m := range htmlH2.FindAllStringSubmatch(idx, -1) {
		fmt.Fprintf(&b, "heading: %s\n", m[1])
	}
	for _, m := range htmlCap.FindAllStringSubmatch(idx, -1) {
		fmt.Fprintf(&b, "caption: %s\n", m[1])
	}
	cells := func(s string) string {
		s = strings.NewReplacer("</th><th", "</th> | <th", "</td><td", "</td> | <td").Replace(s)
		return htmlTag.ReplaceAllString(s, "")
	}
	for _, m := range htmlHead.FindAllStringSubmatch(idx, -1) {
		fmt.Fprintf(&b, "table: %s\n", cells(m[1]))
	}
	for _, m := range htmlRow.FindAllStringSubmatch(idx, -1) {
		fmt.Fprintf(&b, "row: %s\n", cells(m[1]))
	}
	var names []string
	for n := range files {
		if strings.HasSuffix(n, ".csv") && files[strings.TrimSuffix(n, ".csv")+".svg"] != nil {
			names = append(names, strings.TrimSuffix(n, ".csv"))
		}
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "\n== %s\n%s", n, files[n+".csv"])
		var texts []string
		for _, m := range svgTitle.FindAllStringSubmatch(string(files[n+".svg"]), -1) {
			texts = append(texts, m[1])
		}
		fmt.Fprintf(&b, "svg text: %s\n", strings.Join(texts, " | "))
	}
	return b.String()
}

// checkGolden compares got with testdata/name (rewritten with -update).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	golden.Check(t, path, want, []byte(got), golden.Text)
}
