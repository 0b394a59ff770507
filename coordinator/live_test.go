package coordinator_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/local"
	"github.com/msjfarm/msjfarm/monitor"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// resultReads counts the reads of result objects.
type resultReads struct {
	storage.Store
	n atomic.Int64
}

func (s *resultReads) Get(ctx context.Context, key string) ([]byte, error) {
	if strings.Contains(key, "/results/") {
		s.n.Add(1)
	}
	return s.Store.Get(ctx, key)
}

// TestLivePageCompact: the live page of a compact campaign (ids only,
// tasks generated on demand: every campaign past 2 tasks here) has its
// points and plots, with the means of the stored records, and a poll
// after nothing moved reads no record: the page holds a summary per
// point, not a record per finished task.
//
// Complexity 28: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestLivePageCompact(t *testing.T) {
	t.Cleanup(coordinator.SetCompact(2, 2))
	f, err := sweep.Parse([]byte(`name: live-compact
seed: 3
workload: one-or-all
axes:
  arrival_rate: [1, 2, 3]
policies: [fcfs, msf]
replications: 3
run: {arrivals: 2e3, warmup: 2e2}
`), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	base, err := storage.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := &resultReads{Store: base}
	ln, err := monitor.Listen("-http", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := monitor.URL(ln)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var id string
	submitted := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := local.Run(ctx, local.Options{Spec: f, Store: st, Runner: worker.InProcess{}, Workers: 2, HTTP: ln, Linger: time.Minute,
			Submitted: func(r protocol.SubmitReply) { id = r.Campaign; close(submitted) }})
		done <- err
	}()
	select {
	case <-submitted:
	case err := <-done:
		t.Fatalf("run ended early: %v", err)
	}
	poll := func() monitor.Campaign {
		t.Helper()
		resp, err := http.Get(url + "api/campaigns/" + id)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var c monitor.Campaign
		if resp.StatusCode != 200 || json.Unmarshal(body, &c) != nil {
			t.Fatalf("api: %d %s", resp.StatusCode, body)
		}
		return c
	}
	var c monitor.Campaign
	for deadline := time.Now().Add(3 * time.Minute); c.Report == ""; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no report link: %+v", c)
		}
		c = poll()
	}
	if c.State != "done" || c.Total != 18 || c.Done != 18 || c.Points != 6 || c.PointsDone != 6 || c.X != "arrival_rate" {
		t.Errorf("counts: %+v", c)
	}
	// The plotted means are the archive's summary of the stored records.
	a, err := archive.Load(ctx, base, id, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for _, p := range a.Points() {
		if m, ok := p.Metric("mean_response"); ok {
			want[p.Point] = m.Mean
		}
	}
	x, plots := monitor.Plots(a.Points())
	if x != c.X || len(plots) == 0 || len(c.Plots) != len(plots) {
		t.Fatalf("plots: %d on the page, %d from the archive", len(c.Plots), len(plots))
	}
	gotJSON, _ := json.Marshal(c.Plots)
	wantJSON, _ := json.Marshal(plots)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("page's plots\n%s\nwant (from the archive)\n%s", gotJSON, wantJSON)
	}
	if len(want) != 6 {
		t.Errorf("%d points with a mean, want 6", len(want))
	}
	// Nothing moved: the next poll (past the page's 0.5 s reuse) reads no
	// result object.
	time.Sleep(600 * time.Millisecond)
	before := st.n.Load()
	c = poll()
	if n := st.n.Load() - before; n != 0 {
		t.Errorf("a poll with nothing finished read %d result objects", n)
	}
	if c.PointsDone != 6 {
		t.Errorf("second poll: %d points done", c.PointsDone)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}
