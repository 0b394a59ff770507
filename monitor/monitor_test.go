package monitor_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/msjfarm/msjfarm/internal/campaigntest"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/local"
	"github.com/msjfarm/msjfarm/monitor"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// flakyRunner runs tasks in-process, except that msf at arrival rate 2
// fails for good and the first attempt of fcfs's replication 0 at rate 1
// fails once (so it is redelivered).
type flakyRunner struct {
	mu    sync.Mutex
	tried map[string]bool
}

func (r *flakyRunner) Run(ctx context.Context, t *sweep.Task, progress func(done, total int64)) (*worker.Outcome, error) {
	rate, _ := t.Axes["arrival_rate"].(float64)
	switch {
	case t.Policy == "msf" && rate == 2:
		return nil, &worker.PermanentError{Err: errors.New("injected failure")}
	case t.Policy == "fcfs" && rate == 1 && t.Replication == 0:
		r.mu.Lock()
		first := !r.tried[t.ID]
		r.tried[t.ID] = true
		r.mu.Unlock()
		if first {
			return nil, errors.New("injected transient error")
		}
	}
	return worker.InProcess{}.Run(ctx, t, progress)
}

const sweepYAML = `name: monitor-test
seed: 9
workload: one-or-all
axes:
  arrival_rate: [1, 2]
policies: [fcfs, msf]
replications: 2
run: {arrivals: 3e3, warmup: 3e2}
`

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestLiveCampaign runs a campaign with one permanent failure point and
// one redelivered task behind the live page and checks what the page's
// JSON says against the campaign: counts, failures with their policy,
// parameters, axes and error, redeliveries, the worker row, the plotted
// means and CIs against the stored records, the report link and the
// metrics.
func TestLiveCampaign(t *testing.T) {
	ctx := context.Background()
	lr := startLive(t, sweepYAML, &flakyRunner{tried: map[string]bool{}})
	st, base, id, cancel, done := lr.st, lr.base, lr.id, lr.cancel, lr.done
	c := lr.waitReport(t)
	if c.Verify != nil {
		t.Errorf("verification %+v, not asked for", c.Verify)
	}
	if c.State != "done" || c.Total != 8 || c.Done != 6 || c.Failed != 2 || c.Queued != 0 || c.Running != 0 {
		t.Errorf("counts %+v", c)
	}
	if c.Redelivered != 1 {
		t.Errorf("redelivered %d, want 1", c.Redelivered)
	}
	if c.Points != 4 || c.PointsDone != 3 || c.X != "arrival_rate" {
		t.Errorf("points %d/%d x %q", c.PointsDone, c.Points, c.X)
	}
	if c.FailuresTotal != 2 || len(c.Failures) != 2 {
		t.Fatalf("failures %+v", c.Failures)
	}
	for _, fl := range c.Failures {
		if fl.Policy != "msf" || fl.Axes["arrival_rate"] != 2.0 || fl.Params == nil || !strings.Contains(fl.Error, "injected failure") {
			t.Errorf("failure %+v", fl)
		}
	}
	host, _ := os.Hostname()
	if len(c.Workers) != 1 || c.Workers[0].Host != host || c.Workers[0].Slots != 2 || c.Workers[0].Done != 6 || c.Workers[0].Failed != 2 {
		t.Errorf("workers %+v", c.Workers)
	}

	// The plotted means and half-widths are those of the stored records.
	keys, err := st.List(ctx, storage.ResultsPrefix(id))
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string]*record.Record{}
	var tasks []sweep.Task
	for _, k := range keys {
		data, err := st.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := record.Follow(ctx, st, k, data)
		if err != nil {
			t.Fatal(err)
		}
		recs[r.Task.ID] = r
		tasks = append(tasks, r.Task)
	}
	want := map[string]aggregate.Metric{}
	for _, p := range aggregate.Summarize(tasks, recs) {
		if m, ok := p.Metric("mean_response"); ok && p.N > 0 {
			want[p.Policy+"@"+formatRate(p.ArrivalRate)] = m
		}
	}
	var mr *monitor.Plot
	for i := range c.Plots {
		if c.Plots[i].Metric == "mean_response" {
			mr = &c.Plots[i]
		}
	}
	if mr == nil {
		t.Fatal("no mean_response plot")
	}
	got := 0
	for _, s := range mr.Series {
		for _, p := range s.Points {
			w, ok := want[s.Name+"@"+formatRate(p.X)]
			if !ok || p.Y != w.Mean || p.HW == nil || *p.HW != w.HalfWidth || p.N != 2 {
				t.Errorf("%s at %v: %v ± %v (n %d), want %+v", s.Name, p.X, p.Y, p.HW, p.N, w)
			}
			got++
		}
	}
	if got != 3 || len(want) != 3 {
		t.Errorf("%d plotted points, %d with results", got, len(want))
	}

	// The report is served; nothing outside it is.
	if code, body := get(t, strings.TrimSuffix(base, "/")+c.Report); code != 200 || !strings.Contains(string(body), "<html") {
		t.Errorf("report: %d", code)
	}
	for _, u := range []string{"report/" + id + "/../spec.yaml", "report/" + id + "/%2e%2e/spec.yaml", "report/nosuch/index.html"} {
		if code, _ := get(t, base+u); code == 200 {
			t.Errorf("%s: 200", u)
		}
	}
	if code, _ := get(t, base+"api/campaigns/nosuch"); code != 404 {
		t.Errorf("unknown campaign: %d", code)
	}

	// Metrics.
	_, body := get(t, base+"metrics")
	var p expfmt.TextParser
	mf, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	value := func(name, label, val string) float64 {
		for _, m := range mf[name].GetMetric() {
			match := label == ""
			for _, l := range m.GetLabel() {
				match = match || (l.GetName() == label && l.GetValue() == val)
			}
			if !match {
				continue
			}
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
			return m.Gauge.GetValue()
		}
		return math.NaN()
	}
	for _, w := range []struct {
		name, label, val string
		want             float64
	}{
		{"msjfarm_task_redeliveries_total", "", "", 1},
		{"msjfarm_tasks", "state", "done", 6},
		{"msjfarm_tasks", "state", "failed", 2},
		{"msjfarm_worker_tasks_total", "outcome", "done", 6},
		{"msjfarm_worker_tasks_total", "outcome", "error", 3},
		{"msjfarm_worker_tasks_total", "outcome", "failed", 2},
	} {
		if v := value(w.name, w.label, w.val); v != w.want {
			t.Errorf("%s{%s=%q} = %v, want %v", w.name, w.label, w.val, v, w.want)
		}
	}
	cancel()
	r := <-done
	if r.err != nil || r.out.Interrupted {
		t.Fatalf("run: %v %+v", r.err, r.out)
	}
	if _, err := http.Get(base + "healthz"); err == nil {
		t.Error("the page is still served after Run returned")
	}
}

// liveRun is a local run of a sweep behind the live page (startLive).
type liveRun struct {
	st       storage.Store
	base, id string
	cancel   context.CancelFunc
	done     <-chan liveResult
}

type liveResult struct {
	out *local.Outcome
	err error
}

// startLive starts a local run of the sweep (YAML) on two worker slots
// with the live page on a free port, and returns once the campaign is
// submitted.
func startLive(t *testing.T, yaml string, runner worker.Runner) *liveRun {
	t.Helper()
	f, err := sweep.Parse([]byte(yaml), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := monitor.Listen("-http", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	lr := &liveRun{st: st, base: monitor.URL(ln), cancel: cancel}
	submitted := make(chan struct{})
	done := make(chan liveResult, 1)
	lr.done = done
	go func() {
		out, err := local.Run(ctx, local.Options{Spec: f, Store: st, Runner: runner,
			Workers: 2, HTTP: ln, Linger: time.Minute, MaxDeliver: 3,
			Submitted: func(r protocol.SubmitReply) { lr.id = r.Campaign; close(submitted) }})
		done <- liveResult{out, err}
	}()
	select {
	case <-submitted:
	case r := <-done:
		t.Fatalf("run ended early: %v", r.err)
	}
	return lr
}

// waitReport polls the page's JSON until it links the final report (2
// minutes at most) and returns it.
func (lr *liveRun) waitReport(t *testing.T) monitor.Campaign {
	t.Helper()
	var c monitor.Campaign
	deadline := time.Now().Add(2 * time.Minute)
	for c.Report == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no report link: %+v", c)
		}
		time.Sleep(200 * time.Millisecond)
		code, body := get(t, lr.base+"api/campaigns/"+lr.id)
		if code != 200 {
			t.Fatalf("api: %d %s", code, body)
		}
		if err := json.Unmarshal(body, &c); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestLiveVerification: the live page shows a campaign's spot
// verification as `msjfarm status` counts it. Every task of the sweep is
// sampled (verify: 1) and the policy is not deterministic (each run moves
// its mean by one more ulp), so each of the 8 tasks is run three times,
// all 8 mismatch, and the page names the code (FCFS's and MSF's, 4 tasks
// each), no worker. Before, the page said nothing of verification.
func TestLiveVerification(t *testing.T) {
	lr := startLive(t, sweepYAML+"verify: 1\n", &campaigntest.Jitter{})
	c := lr.waitReport(t)
	v := c.Verify
	if v == nil {
		t.Fatal("no verification on the page")
	}
	if v.Fraction != 1 || v.Sampled != 8 || v.Verified != 0 || v.Mismatched != 8 || v.Pending != 0 ||
		len(v.Nondeterministic) != 2 || !strings.HasSuffix(v.Nondeterministic[0], "(4 tasks)") ||
		!strings.HasSuffix(v.Nondeterministic[1], "(4 tasks)") || len(v.Disagreeing) != 0 {
		t.Errorf("verification on the page %+v", v)
	}
	// What the page shows, in a headless Chromium (skipped when absent,
	// required in CI).
	if dom := pageDOM(t, lr.base+"?c="+lr.id); dom != "" {
		for _, want := range []string{
			`<section id="verify-box">`, // not hidden
			`data-verified="0/8"`,
			"0 of 8 sampled tasks verified, 8 mismatched, 0 unverified (no second worker), 0 pending",
			"not deterministic (three runs, three results; msjfarm plugin check tells): policy fcfs",
		} {
			if !strings.Contains(dom, want) {
				t.Errorf("the page's DOM lacks %q", want)
			}
		}
	}
	lr.cancel()
	if r := <-lr.done; r.err != nil || r.out.Interrupted {
		t.Fatalf("run: %v %+v", r.err, r.out)
	}
}

// pageDOM is the live page at url as headless Chromium renders it once
// its script has polled the campaign ("" when there is no Chromium and
// MSJFARM_REQUIRE_SERVERS is not 1: skipped, said so).
func pageDOM(t *testing.T, url string) string {
	t.Helper()
	browser := os.Getenv("MSJFARM_CHROMIUM")
	for _, b := range []string{"chromium", "chromium-browser"} {
		if browser != "" {
			break
		}
		browser, _ = exec.LookPath(b)
	}
	if browser == "" {
		if os.Getenv("MSJFARM_REQUIRE_SERVERS") == "1" {
			t.Fatal("no chromium (MSJFARM_REQUIRE_SERVERS=1): run bash .ci/install-chromium.sh")
		}
		t.Log("no chromium on PATH: the page's DOM is not checked")
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+filepath.Join(t.TempDir(), "profile"), "--virtual-time-budget=5000",
		"--dump-dom", url).Output()
	if err != nil {
		t.Fatalf("%s: %v", browser, err)
	}
	return string(out)
}

func formatRate(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// TestRunRateNeedsASecond: rate = n / elapsed, eta = remaining / rate;
// nothing under a second, where 5 tasks finishing as the run started (its
// stored results read back) made the first progress line say 493000
// tasks/s. 30 tasks in 30 s with 65 to go: 1 task/s, ETA 65 s.
func TestRunRateNeedsASecond(t *testing.T) {
	if rate, eta := monitor.RunRate(5, 10*time.Microsecond, 1195); rate != 0 || eta != -1 {
		t.Errorf("5 tasks in 10 µs: rate %v, eta %v; want 0 and unknown", rate, eta)
	}
	if rate, eta := monitor.RunRate(30, 30*time.Second, 65); rate != 1 || eta != 65 {
		t.Errorf("30 tasks in 30 s: rate %v, eta %v; want 1 and 65", rate, eta)
	}
}
