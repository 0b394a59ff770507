package archive_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/local"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/results/reproduce"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// fixedSpec is a sweep of 2 rates × 2 policies × 3 replications: 12 tasks.
const fixedSpec = `name: stream
seed: 4
workload: one-or-all
axes:
  arrival_rate: [1, 2.5]
policies: [fcfs, msf]
replications: 3
run: {arrivals: 1e3, warmup: 1e2}
`

// TestReaderEqualsSummarize runs real campaigns (one with replications
// added by precision mode) into a store that also holds a foreign
// result, and checks that the streamed reading gives what the
// in-memory one gives: the summary (aggregate.Summarize and Compare over
// every record at once, against Summarize then ComparePaired a point at
// a time) byte for byte, the same tasks in the same order, the warning
// about the foreign result, and the same tasks chosen to reproduce.
//
// Complexity 29: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestReaderEqualsSummarize(t *testing.T) {
	for _, tc := range []struct{ name, spec string }{
		{"fixed", fixedSpec},
		{"precision", `name: stream-precision
seed: 5
workload: one-or-all
axes:
  arrival_rate: [1, 5]
policies: [fcfs, msf]
replications: 2
precision: {metric: mean_response, rel_half_width: 0.02, max_replications: 6, batch: 2}
run: {arrivals: 1e3, warmup: 1e2}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f, st, id := runCampaign(t, tc.spec)
			// A foreign result: a copy of one of the campaign's under a
			// task id that is none of its tasks.
			keys, err := st.List(ctx, storage.ResultsPrefix(id))
			if err != nil || len(keys) == 0 {
				t.Fatalf("results: %v %v", keys, err)
			}
			data, _ := st.Get(ctx, keys[0])
			foreign := "ffffffffffffffffffffffff"
			if err := st.Put(ctx, storage.ResultKey(id, foreign), data); err != nil {
				t.Fatal(err)
			}

			a, err := archive.Load(ctx, st, id, builtin.Catalog{})
			if err != nil {
				t.Fatal(err)
			}
			if f.Precision != nil && len(a.Tasks) <= 8 {
				t.Fatalf("precision mode added no replication (%d tasks): the test does not exercise it", len(a.Tasks))
			}
			if !slices.ContainsFunc(a.Warnings, func(w string) bool { return strings.Contains(w, foreign) }) {
				t.Errorf("no warning about the foreign result %s: %q", foreign, a.Warnings)
			}
			// In memory: every record at once.
			var whole bytes.Buffer
			if err := aggregate.WriteCSV(&whole, a.Points()); err != nil {
				t.Fatal(err)
			}
			// Streamed: a point at a time.
			r, err := archive.Open(ctx, st, id, builtin.Catalog{})
			if err != nil {
				t.Fatal(err)
			}
			s, err := r.Summarize(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.CompareDefault(ctx); err != nil {
				t.Fatal(err)
			}
			var streamed bytes.Buffer
			if err := aggregate.WriteCSV(&streamed, s.Points); err != nil {
				t.Fatal(err)
			}
			if whole.String() != streamed.String() {
				t.Errorf("streamed summary differs:\n%s\nin memory:\n%s", streamed.String(), whole.String())
			}
			if !slices.Equal(r.Warnings, a.Warnings) {
				t.Errorf("warnings %q, in memory %q", r.Warnings, a.Warnings)
			}
			// reproduce: the same sample, and only the chosen records held.
			want, err := reproduce.ChooseTasks(a, "", 3, false, 7)
			if err != nil {
				t.Fatal(err)
			}
			sub, got, total, err := reproduce.Select(ctx, r, "", 3, false, 7)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) || total != len(a.Tasks) || len(sub.Records) != len(want) {
				t.Errorf("Select chose %v of %d (%d records held), ChooseTasks %v of %d", got, total, len(sub.Records), want, len(a.Tasks))
			}
			for _, tid := range got {
				if !bytes.Equal(sub.Raw[tid], a.Raw[tid]) || sub.Records[tid] == nil {
					t.Errorf("task %s: the selected record is not the stored one", tid)
				}
			}
			if _, _, _, err := reproduce.Select(ctx, r, foreign, 0, false, 1); err == nil || !strings.Contains(err.Error(), "not a task of campaign") {
				t.Errorf("--tasks with a foreign id: %v", err)
			}
		})
	}
}

// TestReaderLostResults: a store that lost stored results (the objects
// the campaign's entries refer to) still reads. Of 12 tasks (2 rates × 2
// policies × 3 replications) 5 lose their result: each reads as not run
// with a warning naming its entry, the summary counts 12 − 5 = 7
// replications, and with the list capped at 3 the other 2 warnings are
// counted, not listed.
func TestReaderLostResults(t *testing.T) {
	defer func(n int) { *archive.MaxWarnings = n }(*archive.MaxWarnings)
	ctx := context.Background()
	_, st, id := runCampaign(t, fixedSpec)
	keys, err := st.List(ctx, storage.ResultsPrefix(id))
	if err != nil || len(keys) != 12 {
		t.Fatalf("results: %d %v", len(keys), err)
	}
	var lost []string
	for _, k := range keys[:5] {
		data, err := st.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		ref, ok := record.ParseRef(data)
		if !ok {
			t.Fatalf("%s is not a reference: %.60s", k, data)
		}
		if err := st.Delete(ctx, storage.StoredResultKey(ref)); err != nil {
			t.Fatal(err)
		}
		lost = append(lost, k)
	}
	for _, max := range []int{1000, 3} {
		*archive.MaxWarnings = max
		r, err := archive.Open(ctx, st, id, builtin.Catalog{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := r.Summarize(ctx)
		if err != nil {
			t.Fatalf("max %d: %v", max, err)
		}
		reps := 0
		for _, p := range s.Points {
			reps += p.N
		}
		if reps != 7 {
			t.Errorf("max %d: %d results summarised, want 7", max, reps)
		}
		listed := 0
		for _, k := range lost {
			// The campaign finalised with them (its checksums list them):
			// missing results, not tasks never run.
			if slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, k) && strings.Contains(w, "which is missing") }) {
				listed++
			}
		}
		switch {
		case max == 1000 && (listed != 5 || len(r.Warnings) != 5):
			t.Errorf("max %d: %d of the 5 lost results named in %q", max, listed, r.Warnings)
		case max == 3 && (listed != 3 || len(r.Warnings) != 4 || !strings.Contains(r.Warnings[3], "2 more warnings not listed")):
			t.Errorf("max %d: warnings %q, want 3 named and 2 counted", max, r.Warnings)
		}
	}
}

// runCampaign runs the sweep spec to the end, in-process, into a store of
// its own.
func runCampaign(t *testing.T, spec string) (*sweep.File, storage.Store, string) {
	t.Helper()
	ctx := context.Background()
	f, err := sweep.Parse([]byte(spec), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := local.Run(ctx, local.Options{Spec: f, Store: st, Runner: worker.InProcess{}, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return f, st, out.Submit.Campaign
}
