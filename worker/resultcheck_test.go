package worker_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
)

// TestAbsurdResultsRefused: a real plugin process (testdata/msjfarm-policy-absurd,
// built against the SDK) returns one kind of impossible result per
// policy; through the real worker path (JetStream, the plugin runner,
// local storage) each task fails on its first attempt, permanently, with
// an error naming the field and the plugin's sha256, and no result is
// stored.
func TestAbsurdResultsRefused(t *testing.T) {
	// 2·10^4 arrivals: long enough for Little's law to be checked within
	// about 12.5% (resultcheck.LittleN/n), which the 50% lie exceeds.
	base := tasks(t, 20000, 0)[0]
	base.Run.Warmup = 2000
	field := map[string]string{
		"negative-mean":  "overall.mean_response",
		"utilization":    "utilization",
		"huge-means":     "larger than the 1e+100 any quantity of a run may be",
		"nine-classes":   "classes: 9 classes, the task's workload has 2",
		"arrivals":       "arrivals",
		"seed":           "seed",
		"servers":        "servers",
		"engine":         "engine",
		"oversize":       "result: ",
		"nan":            "overall.mean_response (NaN)",
		"secret-counter": "counters[0].name",
		"little":         "Little's law",
		"halved":         "classes[0].mean_size",
		"class-moved":    "classes[0].count",
		"another-rate":   "window: ",
	}
	var ts []sweep.Task
	for pol := range field {
		tk := base
		tk.Policy, tk.Params = pol, nil
		tk.ID = sweep.TaskID(tk)
		ts = append(ts, tk)
	}
	nc, _, st := queued(t, protocol.Layout{MaxDeliver: 5, AckWait: 5 * time.Second}, ts)
	ctx := context.Background()
	sum, err := pluginhost.Checksum(filepath.Join(absurdDir, "msjfarm-policy-absurd"))
	if err != nil {
		t.Fatal(err)
	}
	w := runPluginWorker(t, nc, st, absurdDir, 2, len(ts))
	if w.Stats.Done.Load() != 0 || w.Stats.Failed.Load() != int64(len(ts)) || w.Stats.Retried.Load() != 0 {
		t.Fatalf("done %d failed %d retried %d; want 0, %d, 0", w.Stats.Done.Load(), w.Stats.Failed.Load(), w.Stats.Retried.Load(), len(ts))
	}
	for _, tk := range ts {
		rec, _, err := record.Read(ctx, st, "camp", tk.ID)
		if err != nil {
			t.Fatalf("%s: %v", tk.Policy, err)
		}
		if !rec.Failed() || rec.Result != nil {
			t.Errorf("%s: stored %+v", tk.Policy, rec.Result)
		}
		if !strings.Contains(rec.Error, "attempt 1 of 5") || !strings.Contains(rec.Error, field[tk.Policy]) || !strings.Contains(rec.Error, sum[:12]) {
			t.Errorf("%s: error %q, want attempt 1, %q and sha256 %s", tk.Policy, rec.Error, field[tk.Policy], sum[:12])
		}
		if strings.Contains(rec.Error, "EXAMPLEKEY") {
			t.Errorf("%s: the refused counter name is quoted back: %q", tk.Policy, rec.Error)
		}
	}
	stored, err := st.List(ctx, storage.StoredResultsPrefix)
	if err != nil || len(stored) != 0 {
		t.Fatalf("stored results: %v %v", stored, err)
	}
}

// TestPreemptingForgeryRefused: a real plugin process (pluginhost's
// badproto, serving the engine policy msf-preemptive as "preempting") halves its
// results' response and waiting times and numbers in system, beside
// honest sizes. Under preemption none, response = wait + size refused
// that; it is now checked for every engine policy (its Info does not call
// it a reference model), and the task fails on its first attempt, stores
// nothing, and names the field. Before, a preempting plugin's halved
// times were stored.
func TestPreemptingForgeryRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "badproto")
	if err := hosttest.Build(dir, "./worker/pluginhost/testdata/msjfarm-policy-badproto"); err != nil {
		t.Fatal(err)
	}
	tk := tasks(t, 20000, 0)[0]
	tk.Policy, tk.Params = "preempting", nil
	tk.ID = sweep.TaskID(tk)
	nc, _, st := queued(t, protocol.Layout{MaxDeliver: 5, AckWait: 5 * time.Second}, []sweep.Task{tk})
	w := runPluginWorkerEnv(t, nc, st, dir, []string{"BADPROTO_MODE=halvedtimes"}, 1, 1)
	if w.Stats.Failed.Load() != 1 || w.Stats.Retried.Load() != 0 {
		t.Fatalf("failed %d retried %d; want 1, 0", w.Stats.Failed.Load(), w.Stats.Retried.Load())
	}
	rec, _, err := record.Read(context.Background(), st, "camp", tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Failed() || rec.Result != nil || !strings.Contains(rec.Error, "attempt 1 of 5") || !strings.Contains(rec.Error, "mean_response") ||
		!strings.Contains(rec.Error, "mean_wait") {
		t.Fatalf("record: failed %v, result %v, error %q; want attempt 1 refused at mean_response = mean_wait + mean_size", rec.Failed(), rec.Result != nil, rec.Error)
	}
}

// TestOtherEngineRefused: the result check draws the seed's own jobs
// again only for a plugin whose engine draws this engine's job sequence
// (sim.SameSequence), and the engine is the plugin's own claim. A real
// plugin process (badproto serving msf-preemptive as "preempting") halves
// every time, mean size and number in system alike, a forgery only the
// seed's jobs expose, and declares in its Info and its results an engine
// before sim.SequenceSince, one newer than this engine, or no version at
// all: before, each of these escaped the check and was stored. Now the
// task fails on its first attempt before anything runs (ErrEngine), and
// nothing is stored. Declaring sim.SequenceSince, the same forgery is run
// and refused by the check. With PluginRunner.AnyEngine
// (--plugin-any-engine) an honest plugin declaring an old engine runs and
// its result, naming that engine, is stored.
func TestOtherEngineRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "badproto")
	if err := hosttest.Build(dir, "./worker/pluginhost/testdata/msjfarm-policy-badproto"); err != nil {
		t.Fatal(err)
	}
	task := func() sweep.Task {
		tk := tasks(t, 20000, 0)[0]
		tk.Policy, tk.Params = "preempting", nil
		tk.ID = sweep.TaskID(tk)
		return tk
	}
	read := func(st storage.Store, tk sweep.Task) *record.Record {
		rec, _, err := record.Read(context.Background(), st, "camp", tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	for _, c := range []struct{ engine, want string }{
		{"0.5.9", "engine not checkable"},
		{"99.0.0", "engine not checkable"},
		{"forged", "engine not checkable"},
		{sim.SequenceSince, "mean_size"}, // claimed, then checked
	} {
		t.Run(c.engine, func(t *testing.T) {
			tk := task()
			nc, _, st := queued(t, protocol.Layout{MaxDeliver: 5, AckWait: 5 * time.Second}, []sweep.Task{tk})
			w := runPluginWorkerEnv(t, nc, st, dir, []string{"BADPROTO_MODE=scaled", "BADPROTO_ENGINE=" + c.engine}, 1, 1)
			if w.Stats.Failed.Load() != 1 || w.Stats.Retried.Load() != 0 {
				t.Fatalf("failed %d retried %d; want 1, 0", w.Stats.Failed.Load(), w.Stats.Retried.Load())
			}
			rec := read(st, tk)
			if !rec.Failed() || rec.Result != nil || !strings.Contains(rec.Error, "attempt 1 of 5") || !strings.Contains(rec.Error, c.want) {
				t.Fatalf("record: failed %v, result %v, error %q; want attempt 1 refused with %q", rec.Failed(), rec.Result != nil, rec.Error, c.want)
			}
			if c.want == "engine not checkable" && (!strings.Contains(rec.Error, fmt.Sprintf("links engine %q", c.engine)) || !strings.Contains(rec.Error, "--plugin-any-engine")) {
				t.Errorf("error %q: want the engine declared and the flag that accepts it", rec.Error)
			}
			stored, err := st.List(context.Background(), storage.StoredResultsPrefix)
			if err != nil || len(stored) != 0 {
				t.Fatalf("stored results: %v %v", stored, err)
			}
		})
	}
	t.Run("any-engine", func(t *testing.T) {
		tk := task()
		nc, _, st := queued(t, protocol.Layout{MaxDeliver: 5, AckWait: 5 * time.Second}, []sweep.Task{tk})
		r := &worker.PluginRunner{Host: pluginhost.New(pluginhost.Config{MaxConcurrent: 1, Grace: time.Second, Logger: hclog.NewNullLogger(), Env: []string{"BADPROTO_ENGINE=0.5.9"}}),
			Dirs: []string{dir}, Store: st, CacheDir: filepath.Join(t.TempDir(), "cache"), Logf: t.Logf, AnyEngine: true}
		w := runWorkerWith(t, nc, st, r, 1, 1)
		if w.Stats.Done.Load() != 1 || w.Stats.Failed.Load() != 0 {
			t.Fatalf("done %d failed %d; want 1, 0", w.Stats.Done.Load(), w.Stats.Failed.Load())
		}
		if rec := read(st, tk); rec.Result == nil || rec.Result.Engine != "0.5.9" {
			t.Fatalf("record %+v: want a result of engine 0.5.9", rec)
		}
	})
}
