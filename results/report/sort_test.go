package report

import (
	"bytes"
	"context"
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
	"time"
)

// TestTableSortsInBrowser runs the page's sorting script in headless
// Chromium (Debian: chromium; skipped when absent): two clicks on the mean
// response time heading sort the rows by it, descending, and mark the
// heading.
func TestTableSortsInBrowser(t *testing.T) {
	browser := headlessBrowser(t)
	c := simulateCampaign(t, "one-or-all", []policyRun{fcfsRun()}, []float64{0.5, 1, 1.5, 2}, 2, 3000)
	files, err := Render(c)
	if err != nil {
		t.Fatal(err)
	}
	// Column 10 (index 9) is the mean response time; click it twice.
	out := clickedDOM(t, browser, files["index.html"],
		`var th = document.querySelectorAll("table.sortable thead th")[9]; th.click(); th.click();`)
	if !bytes.Contains(out, []byte(`<th aria-sort="descending">mean response time E[T]</th>`)) {
		t.Errorf("heading not marked descending")
	}
	body := out[bytes.Index(out, []byte("<tbody>")):]
	rows := regexp.MustCompile(`(?s)<tr[^>]*>(.*?)</tr>`).FindAllSubmatch(body, -1)
	cellRE := regexp.MustCompile(`<td(?: data-v="([^"]*)")?>`)
	var got []float64
	for _, r := range rows {
		cells := cellRE.FindAllSubmatch(r[1], -1)
		if len(cells) < 10 {
			continue
		}
		v, err := strconv.ParseFloat(string(cells[9][1]), 64)
		if err != nil {
			t.Fatalf("row %q: %v", r[1], err)
		}
		got = append(got, v)
	}
	if len(got) != len(c.Points) {
		t.Fatalf("%d rows after sorting, want %d", len(got), len(c.Points))
	}
	for i := 1; i < len(got); i++ {
		if got[i] > got[i-1] {
			t.Errorf("rows not in descending order: %v", got)
			break
		}
	}
	if got[0] == got[len(got)-1] {
		t.Errorf("all rows equal (%v): the test cannot tell a sorted table", got)
	}
}

// headlessBrowser is the path of a headless Chromium; the test is skipped
// without one.
func headlessBrowser(t *testing.T) string {
	for _, b := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
	}
	t.Skip("no headless Chromium (apt-get install chromium)")
	return ""
}

// clickedDOM is the DOM of page after script ran in browser at its end.
func clickedDOM(t *testing.T, browser string, page []byte, script string) []byte {
	t.Helper()
	page = bytes.Replace(page, []byte("</body>"), []byte("<script>"+script+"</script></body>"), 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "index.html")
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--dump-dom", "file://"+path).Output()
	if err != nil {
		t.Fatalf("%s: %v", browser, err)
	}
	return out
}

// TestComparisonSortsInBrowser: a click on the comparison table's
// "E[T] vs fcfs" heading sorts its rows by the relative difference,
// ascending, and a second descending, the undefined comparison last both
// times. The column sorted as text: "+120.0%" first, "-73.0%" last.
func TestComparisonSortsInBrowser(t *testing.T) {
	browser := headlessBrowser(t)
	files, err := Render(cmpSortCampaign())
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	for _, r := range cmpSortRels {
		if !math.IsNaN(r) {
			want = append(want, 100*r)
		}
	}
	sort.Float64s(want)
	for clicks, order := range []string{"ascending", "descending"} {
		if clicks == 1 {
			slices.Reverse(want)
		}
		script := `var th = document.querySelectorAll("table.sortable")[0].querySelectorAll("thead th")[2];` +
			strings.Repeat(" th.click();", clicks+1)
		out := string(clickedDOM(t, browser, files["index.html"], script))
		if !strings.Contains(out, `<th aria-sort="`+order+`">E[T] vs fcfs</th>`) {
			t.Fatalf("%s: the comparison table is not the first sortable one, or its heading is not marked", order)
		}
		tbl := cmpTable(t, out)
		var got []string
		for _, m := range regexp.MustCompile(`<tr class="cmp-[a-z]+"><td>a</td><td data-v="[^"]*">[^<]*</td><td data-v="([^"]*)">`).FindAllStringSubmatch(tbl, -1) {
			got = append(got, m[1])
		}
		if len(got) != len(cmpSortRels) || got[len(got)-1] != "" {
			t.Fatalf("%s: sort keys %q: want %d rows, the undefined one (\"\") last", order, got, len(cmpSortRels))
		}
		for i, w := range want {
			if v, err := strconv.ParseFloat(got[i], 64); err != nil || math.Abs(v-w) > 1e-9 {
				t.Errorf("%s: rows sorted %q, want %v then the undefined one", order, got, want)
				break
			}
		}
	}
}
