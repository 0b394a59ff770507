package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/msjfarm/msjfarm/internal/procutil"
)

// chromium finds the browser for the live-page test (.ci/install-chromium.sh
// installs it): $MSJFARM_CHROMIUM, else chromium or chromium-browser on
// PATH. Missing, the test is skipped, or fails under
// MSJFARM_REQUIRE_SERVERS=1 (CI).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MSJFARM_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("MSJFARM_REQUIRE_SERVERS") == "1" {
		t.Fatal("no chromium (MSJFARM_REQUIRE_SERVERS=1): run bash .ci/install-chromium.sh")
	}
	t.Skip("no chromium on PATH (bash .ci/install-chromium.sh installs it; or set MSJFARM_CHROMIUM)")
	return ""
}

// freeAddr is a 127.0.0.1 address with a port nobody listens on now and
// that no earlier call handed out. The kernel may give a port just closed
// to the next bind to port 0, so two calls in a row (a coordinator's and a
// worker's address) could name the same port: the second server then
// fails to listen while the first answers in its place (both serve
// /readyz), and the test waits for a process that is gone.
func freeAddr(t *testing.T) string {
	t.Helper()
	givenMu.Lock()
	defer givenMu.Unlock()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if !given[addr] {
			given[addr] = true
			return addr
		}
	}
	t.Fatal("no fresh free port in 100 tries")
	return ""
}

var (
	givenMu sync.Mutex
	given   = map[string]bool{}
)

var httpClient = http.Client{Timeout: 10 * time.Second}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := httpClient.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func parseMetrics(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	var p expfmt.TextParser
	mf, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return mf
}

// metricValue is the value of the family's sample whose labels include
// the given ones (counter, gauge or untyped), or the sum of the matching
// histograms' counts.
func metricValue(t *testing.T, mf map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f := mf[name]
	if f == nil {
		t.Fatalf("/metrics has no %s", name)
	}
	sum, found := 0.0, false
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			ok := false
			for _, l := range m.Label {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					ok = true
				}
			}
			if !ok {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		}
	}
	if !found {
		t.Fatalf("/metrics has no %s%v", name, labels)
	}
	return sum
}

const liveSweep = `name: live-page
seed: 11
workload: one-or-all
axes:
  arrival_rate: [1, 3, 5, 6.5]
policies:
  - first-fit
  - msf
  - {name: msfq, threshold: 31}
replications: 2
run: {arrivals: %s, warmup: 1e3, deadline: 5m}
`

// TestLivePageBrowser runs `msjfarm run -http` with one worker slot and
// watches the live page in a real headless Chromium while the campaign
// runs: the progress and the number of plotted points must advance
// through intermediate values (not jump from nothing to everything), the
// final report must be linked at the end, and the counters of /metrics must
// equal the campaign's final counts. The screenshot is saved as
// live-page.png in the test's artifact directory (go test -artifacts
// -outputdir DIR keeps it).
func TestLivePageBrowser(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	sw := filepath.Join(dir, "live.yaml")
	arrivals := os.Getenv("MSJFARM_LIVE_ARRIVALS")
	if arrivals == "" {
		// Enough for the campaign to span several of the page's
		// one-second polls on a fast, idle machine: about 6 s of
		// simulation on one worker slot here. At 8e5 it once took
		// under 2 s (MSF and MSFQ got faster) and the page saw only
		// [8 24] finished tasks.
		arrivals = "3e6"
	}
	if err := os.WriteFile(sw, []byte(fmt.Sprintf(liveSweep, arrivals)), 0o644); err != nil {
		t.Fatal(err)
	}
	const tasks, points = 24, 12
	addr := freeAddr(t)
	out := &procutil.Buffer{}
	cmd := exec.Command(bin, "run", "-workers", "1", "-runner", "inprocess", "-q", "-http", addr,
		"-http-linger", "2m", "-storage", filepath.Join(dir, "data"), sw)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("--- msjfarm run output:\n%s", out.String())
		}
	})
	base := "http://" + addr + "/"
	waitFor(t, "the live page URL on stderr", 30*time.Second, func() bool {
		return strings.Contains(out.String(), base)
	})

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(browser),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(filepath.Join(dir, "chromium-profile")),
		chromedp.WindowSize(1280, 1700),
	)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	// Ceilings, not expectations: the campaign takes seconds on an idle
	// machine and minutes on a loaded one (20 of 24 tasks in 3 minutes at
	// a load of 75 on 2 cores).
	ctx, cancelT := context.WithTimeout(ctx, 12*time.Minute)
	defer cancelT()
	if err := chromedp.Do(ctx, chromedp.Navigate(base)); err != nil {
		t.Fatalf("opening %s in chromium: %v", base, err)
	}

	// Sample what the page shows (its body's data attributes, set by
	// app.js from the JSON it polls) until the campaign is done.
	var finishedSeen, plottedSeen []int
	var midShot []byte
	state := ""
	deadline := time.Now().Add(10 * time.Minute)
	for state != "done" {
		if time.Now().After(deadline) {
			t.Fatalf("the page did not reach state done; finished %v, plotted %v", finishedSeen, plottedSeen)
		}
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
			`[document.body.dataset.finished||"-1", document.body.dataset.plotted||"-1", document.body.dataset.state||""]`))
		if err != nil {
			t.Fatal(err)
		}
		f, _ := strconv.Atoi(v[0])
		p, _ := strconv.Atoi(v[1])
		state = v[2]
		if f >= 0 && (len(finishedSeen) == 0 || finishedSeen[len(finishedSeen)-1] != f) {
			finishedSeen = append(finishedSeen, f)
		}
		if p >= 0 && (len(plottedSeen) == 0 || plottedSeen[len(plottedSeen)-1] != p) {
			plottedSeen = append(plottedSeen, p)
		}
		if midShot == nil && f >= tasks/2 && f < tasks {
			// The page half filled in.
			if midShot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
				_ = os.WriteFile(filepath.Join(t.ArtifactDir(), "live-page-running.png"), midShot, 0o644)
			}
		}
		time.Sleep(150 * time.Millisecond)
	}
	t.Logf("finished tasks seen on the page: %v; plotted points: %v", finishedSeen, plottedSeen)
	checkAdvances(t, "finished tasks", finishedSeen, tasks)
	checkAdvances(t, "plotted points", plottedSeen, points)

	// The final report is linked once written.
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#report-link")); err != nil {
		t.Fatalf("no report link: %v", err)
	}
	// The property (absolute URL), not the attribute.
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("report-link").href`))
	if err != nil {
		t.Fatal(err)
	}
	if code, body := httpGet(t, href); code != 200 || !strings.Contains(body, "<html") {
		t.Fatalf("report link %s: %d", href, code)
	}
	circles, err := chromedp.Run(ctx, chromedp.Evaluate[int](
		`document.querySelector('svg[data-metric="mean_response"]').querySelectorAll(".pt").length`)) // a marker of any shape
	if err != nil {
		t.Fatal(err)
	}
	if circles != points {
		t.Errorf("mean response plot has %d markers, want %d", circles, points)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.ArtifactDir(), "live-page.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Error("screenshot is not a PNG")
	}

	// Metrics against the campaign's final counts.
	code, body := httpGet(t, base+"metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	mf := parseMetrics(t, body)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"msjfarm_tasks", []string{"state", "done"}, tasks},
		{"msjfarm_tasks", []string{"state", "failed"}, 0},
		{"msjfarm_tasks", []string{"state", "running"}, 0},
		{"msjfarm_tasks", []string{"state", "queued"}, 0},
		{"msjfarm_campaigns", []string{"state", "done"}, 1},
		{"msjfarm_worker_tasks_total", []string{"outcome", "done"}, tasks},
		{"msjfarm_worker_tasks_total", []string{"outcome", "failed"}, 0},
		{"msjfarm_replication_wall_seconds", nil, tasks},
		{"msjfarm_task_redeliveries_total", nil, 0},
		{"msjfarm_nats_connected", nil, 1},
	} {
		if got := metricValue(t, mf, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if ev := metricValue(t, mf, "msjfarm_simulated_events_total"); ev < float64(tasks) {
		t.Errorf("msjfarm_simulated_events_total = %v", ev)
	}
	// Result writes: one PutIfAbsent per task.
	if n := metricValue(t, mf, "msjfarm_storage_write_seconds", "op", "put_if_absent"); n < tasks {
		t.Errorf("storage writes timed: %v, want >= %d", n, tasks)
	}
	if code, _ := httpGet(t, base+"healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	if code, body := httpGet(t, base+"readyz"); code != 200 {
		t.Errorf("/readyz: %d %s", code, body)
	}
}

// checkAdvances: the values seen rise monotonically to want and pass
// through at least two values strictly between 0 and want, i.e. the page
// filled in while the campaign ran.
func checkAdvances(t *testing.T, what string, seen []int, want int) {
	t.Helper()
	if len(seen) == 0 || seen[len(seen)-1] != want {
		t.Fatalf("%s: saw %v, want to end at %d", what, seen, want)
	}
	mid := 0
	for i, v := range seen {
		if i > 0 && v < seen[i-1] {
			t.Errorf("%s went down: %v", what, seen)
		}
		if v > 0 && v < want {
			mid++
		}
	}
	if mid < 2 {
		t.Errorf("%s: saw %v, want at least two intermediate values", what, seen)
	}
}
