package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/campaigntest"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/local"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

const testSweep = `name: local-run
seed: 5
workload: one-or-all
axes:
  arrival_rate: [1, 2]
policies: [fcfs]
replications: 3
run: {arrivals: 2e3, warmup: 1e2}
`

func spec(t *testing.T) (*sweep.File, *sweep.Campaign) {
	t.Helper()
	f, err := sweep.Parse([]byte(testSweep), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

// TestRunAndResume: a run finishes the campaign and stores its summary; a
// second run of the same sweep on the same storage runs nothing,
// summarises to the same bytes and keeps the campaign's creation time
// (each run's embedded NATS starts empty: it was taken anew).
func TestRunAndResume(t *testing.T) {
	f, camp := spec(t)
	st, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var created []time.Time
	var summaries [][]byte
	for i := range 2 {
		var submitted atomic.Int32
		out, err := local.Run(t.Context(), local.Options{Spec: f, Store: st, Runner: worker.InProcess{}, Workers: 2,
			Submitted: func(rep protocol.SubmitReply) { submitted.Add(1) }})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		s := out.Status
		if out.Interrupted || s == nil || s.State != protocol.CampaignDone || s.Done != 6 || s.Failed != 0 || submitted.Load() != 1 {
			t.Fatalf("run %d: outcome %+v, status %+v, submitted %d", i, out, s, submitted.Load())
		}
		if out.Submit.Campaign != camp.ID || out.Submit.Tasks != 6 || out.Submit.AlreadyDone != 6*i {
			t.Fatalf("run %d: submit reply %+v (campaign %s)", i, out.Submit, camp.ID)
		}
		sum, err := st.Get(t.Context(), storage.SummaryKey(camp.ID))
		if err != nil {
			t.Fatal(err)
		}
		summaries = append(summaries, sum)
		var m archive.Manifest
		if data, err := st.Get(t.Context(), storage.ManifestKey(camp.ID)); err != nil || json.Unmarshal(data, &m) != nil {
			t.Fatalf("manifest: %v", err)
		}
		created = append(created, m.Created)
		time.Sleep(10 * time.Millisecond) // a clock read anew would differ
	}
	if !created[0].Equal(created[1]) || created[0].IsZero() {
		t.Fatalf("the second run changed the campaign's creation time: %v, then %v", created[0], created[1])
	}
	if !bytes.Equal(summaries[0], summaries[1]) {
		t.Fatalf("resumed summary differs:\n%s\n%s", summaries[0], summaries[1])
	}
	if keys, err := st.List(t.Context(), storage.ResultsPrefix(camp.ID)); err != nil || len(keys) != 6 {
		t.Fatalf("%d results, %v", len(keys), err)
	}
}

// blocking runs no replication: it waits for its context, so a campaign
// run with it finishes only when interrupted.
type blocking struct{ started atomic.Int32 }

func (b *blocking) Run(ctx context.Context, _ *sweep.Task, _ func(int64, int64)) (*worker.Outcome, error) {
	b.started.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestInterrupt: a run whose context ends stops its workers, reports the
// campaign's state and stores nothing as failed; running again resumes
// and finishes it.
func TestInterrupt(t *testing.T) {
	f, camp := spec(t)
	st, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b := &blocking{}
	var progress atomic.Int32
	out, err := local.Run(ctx, local.Options{Spec: f, Store: st, Runner: b, Workers: 2,
		Progress: func(s *protocol.Status) {
			// Interrupt once both workers hold a task.
			if progress.Add(1); b.started.Load() == 2 {
				cancel()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Interrupted || out.Status == nil || out.Status.Done != 0 || out.Status.Failed != 0 || out.Status.Total != 6 {
		t.Fatalf("interrupted outcome %+v, status %+v", out, out.Status)
	}
	if b.started.Load() < 2 || progress.Load() == 0 {
		t.Fatalf("%d replications started, %d progress calls", b.started.Load(), progress.Load())
	}
	if keys, _ := st.List(t.Context(), storage.ResultsPrefix(camp.ID)); len(keys) != 0 {
		t.Fatalf("interrupted run stored %v", keys)
	}
	out, err = local.Run(t.Context(), local.Options{Spec: f, Store: st, Runner: worker.InProcess{}, Workers: 2})
	if err != nil || out.Interrupted || out.Status.State != protocol.CampaignDone || out.Status.Done != 6 {
		t.Fatalf("resumed run: %v, %+v", err, out)
	}
}

func TestOptionsErrors(t *testing.T) {
	f, _ := spec(t)
	st, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o    local.Options
		want string
	}{
		{local.Options{Store: st, Runner: worker.InProcess{}, Workers: 1}, "Spec"},
		{local.Options{Spec: f, Runner: worker.InProcess{}, Workers: 1}, "Store"},
		{local.Options{Spec: f, Store: st, Workers: 1}, "Runner"},
		{local.Options{Spec: f, Store: st, Runner: worker.InProcess{}}, "Workers"},
	} {
		if _, err := local.Run(t.Context(), tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("options %+v: err %v, want one naming %s", tc.o, err, tc.want)
		}
	}
}

// TestRunVerifyNondeterministic: a local run with spot verification of a
// policy that is not deterministic finishes as soon as every sampled task
// was run three times (a third worker identity takes the mismatches' third
// run) and names the code. With one verifier it waited the whole
// verification wait, 10 minutes, for a third worker that never came.
func TestRunVerifyNondeterministic(t *testing.T) {
	f, _ := spec(t)
	f.Verify = 1
	st, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := local.Run(ctx, local.Options{Spec: f, Store: st, Runner: &campaigntest.Jitter{}, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Status
	if out.Interrupted || s == nil || s.State != protocol.CampaignDone || s.Verify == nil || s.Verify.Mismatched != 6 ||
		len(s.Verify.Nondeterministic) != 1 || len(s.Verify.Disagreeing) != 0 {
		t.Fatalf("outcome %+v, status %+v, verify %+v", out, s, s.Verify)
	}
}

// TestPrecisionRoundsFromStoredResults: a precision campaign whose added
// replications are already in the store (the sweep run again with a
// larger max_replications) decides its rounds at once. They waited for
// the coordinator's periodic reconcile, 30 s a round: with it an hour
// here, the second run never finished.
func TestPrecisionRoundsFromStoredResults(t *testing.T) {
	const sw = `name: prec
seed: 3
workload: one-or-all
axes: {arrival_rate: [2]}
policies: [fcfs]
replications: 2
precision: {metric: mean_response, rel_half_width: 1e-9, max_replications: %d, batch: 2}
run: {arrivals: 2e3, warmup: 1e2}
`
	st, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i, max := range []int{6, 8} {
		f, err := sweep.Parse(fmt.Appendf(nil, sw, max), "yaml")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		out, err := local.Run(ctx, local.Options{Spec: f, Store: st, Runner: worker.InProcess{}, Workers: 2, Reconcile: time.Hour})
		cancel()
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if s := out.Status; out.Interrupted || s == nil || s.State != protocol.CampaignDone || s.Done != max {
			t.Fatalf("run %d (max_replications %d): interrupted %v, status %+v", i, max, out.Interrupted, out.Status)
		}
	}
}
