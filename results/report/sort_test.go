package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestTableSortsInBrowser runs the page's sorting script in headless
// Chromium (Debian: chromium; skipped when absent): two clicks on the mean
// response time heading sort the rows by it, descending, and mark the
// heading.
func TestTableSortsInBrowser(t *testing.T) {
	browser := ""
	for _, b := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(b); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no headless Chromium (apt-get install chromium)")
	}
	c := simulateCampaign(t, "one-or-all", []policyRun{fcfsRun()}, []float64{0.5, 1, 1.5, 2}, 2, 3000)
	files, err := Render(c)
	if err != nil {
		t.Fatal(err)
	}
	// Column 10 (index 9) is the mean response time; click it twice.
	page := bytes.Replace(files["index.html"], []byte("</body>"), []byte(
		`<script>var th = document.querySelectorAll("table.sortable thead th")[9]; th.click(); th.click();</script></body>`), 1)
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
