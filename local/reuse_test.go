package local_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/local"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// counting runs replications in-process and records which tasks ran; with
// as set, it reports that code instead of the built-ins (standing in for a
// plugin binary or another engine version, whose numbers may differ).
type counting struct {
	mu  sync.Mutex
	ran map[string]int
	as  *record.Impl
}

func (c *counting) Run(ctx context.Context, t *sweep.Task, p func(int64, int64)) (*worker.Outcome, error) {
	out, err := worker.InProcess{}.Run(ctx, t, p)
	if err != nil {
		return nil, err
	}
	if c.as != nil {
		// An older engine's result says so itself, as the result check
		// requires of the engine a runner declares.
		out.Provenance.Engine, out.Result.Engine = c.as.Engine, c.as.Engine
		if sha, ok := cutPlugin(c.as.Policy); ok {
			out.Provenance.Runner, out.Provenance.PluginSHA256 = worker.RunnerPlugin, sha
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ran == nil {
		c.ran = map[string]int{}
	}
	c.ran[t.ID]++
	return out, nil
}

func cutPlugin(p string) (string, bool) {
	const pre = "plugin:"
	if len(p) > len(pre) && p[:len(pre)] == pre {
		return p[len(pre):], true
	}
	return "", false
}

// qfig3 is examples/q-fig3.yaml shortened to 2,000 arrivals, 2
// replications, 3 rates and 2 policies, with edit applied to the parsed
// file.
func qfig3(t *testing.T, edit func(f *sweep.File)) (*sweep.File, *sweep.Campaign) {
	t.Helper()
	return qfig3File(t, func(f *sweep.File) {
		f.Replications = 2
		f.Axes["arrival_rate"] = []any{1, 4, 7}
		f.Policies = []any{"fcfs", "msf"}
		if edit != nil {
			edit(f)
		}
	})
}

// qfig3File is examples/q-fig3.yaml as it is (7 rates, 5 policies, 3
// replications) but with 2,000 arrivals per replication, with edit
// applied to the parsed file.
func qfig3File(t *testing.T, edit func(f *sweep.File)) (*sweep.File, *sweep.Campaign) {
	t.Helper()
	data, err := os.ReadFile("../examples/q-fig3.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := sweep.Parse(data, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	f.Run.Arrivals, f.Run.Warmup = 2000, 200
	if edit != nil {
		edit(f)
	}
	c, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func runLocal(t *testing.T, st storage.Store, f *sweep.File, r worker.Runner) *local.Outcome {
	t.Helper()
	out, err := local.Run(t.Context(), local.Options{Spec: f, Store: st, Runner: r, Workers: 2, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status.State != protocol.CampaignDone || out.Status.Failed != 0 {
		t.Fatalf("status %+v", out.Status)
	}
	return out
}

// grown is q-fig3 with one more replication, one more rate and one more
// policy: the "done when".
func grown(f *sweep.File) {
	f.Replications++
	f.Axes["arrival_rate"] = append(f.Axes["arrival_rate"], 3)
	f.Policies = append(f.Policies, "lsf")
}

// TestReuseAcrossCampaigns: re-running q-fig3 with one more replication,
// rate and policy runs exactly the new tasks and reports the rest as
// reused; the results it shares with the first campaign are the same
// stored objects, and each task ran once over both campaigns.
func TestReuseAcrossCampaigns(t *testing.T) {
	st, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fa, ca := qfig3File(t, nil)
	fb, cb := qfig3File(t, grown)
	if ca.ID == cb.ID || len(ca.Tasks) != 105 || len(cb.Tasks) != 8*6*4 {
		t.Fatalf("campaigns %s (%d tasks) and %s (%d tasks)", ca.ID, len(ca.Tasks), cb.ID, len(cb.Tasks))
	}
	old := map[string]bool{}
	for _, tk := range ca.Tasks {
		old[tk.ID] = true
	}
	shared := 0
	for _, tk := range cb.Tasks {
		if old[tk.ID] {
			shared++
		}
	}
	if shared != len(ca.Tasks) { // 7 rates × 5 policies × 3 replications
		t.Fatalf("the grown sweep shares %d of the %d tasks", shared, len(ca.Tasks))
	}
	r := &counting{}
	runLocal(t, st, fa, r)
	out := runLocal(t, st, fb, r)
	if out.Submit.Reused != shared || out.Submit.AlreadyDone != shared || out.Submit.Published != len(cb.Tasks)-shared {
		t.Fatalf("grown campaign: %+v; want %d reused and %d published", out.Submit, shared, len(cb.Tasks)-shared)
	}
	if len(r.ran) != len(cb.Tasks) {
		t.Fatalf("%d distinct tasks ran, want %d", len(r.ran), len(cb.Tasks))
	}
	for id, n := range r.ran {
		if n != 1 {
			t.Fatalf("task %s ran %d times", id, n)
		}
	}
	// Both campaigns reference one stored object per shared task.
	for _, tk := range ca.Tasks {
		a, _ := st.Get(t.Context(), storage.ResultKey(ca.ID, tk.ID))
		b, _ := st.Get(t.Context(), storage.ResultKey(cb.ID, tk.ID))
		if _, ok := record.ParseRef(a); !ok || !bytes.Equal(a, b) {
			t.Fatalf("task %s: entries %s and %s", tk.ID, a, b)
		}
	}
	keys, err := st.List(t.Context(), storage.StoredResultsPrefix)
	if err != nil || len(keys) != len(cb.Tasks) {
		t.Fatalf("%d stored results, want %d (%v)", len(keys), len(cb.Tasks), err)
	}
}

// TestNoReuseAcrossCode: results computed by other code are not reused —
// another engine version, or another plugin binary for a policy — while
// those of unchanged code are.
func TestNoReuseAcrossCode(t *testing.T) {
	st, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Campaign 1 ran on an "older engine": nothing of it may be reused.
	fa, ca := qfig3(t, nil)
	runLocal(t, st, fa, &counting{as: &record.Impl{Engine: "0.0.1-old", Policy: "builtin"}})
	fb, cb := qfig3(t, func(f *sweep.File) { f.Name = "renamed" })
	if cb.ID == ca.ID {
		t.Fatal("same campaign")
	}
	r := &counting{}
	out := runLocal(t, st, fb, r)
	if out.Submit.Reused != 0 || len(r.ran) != len(cb.Tasks) {
		t.Fatalf("after an engine change: %+v, %d ran; want nothing reused", out.Submit, len(r.ran))
	}

	// fcfs pinned to plugin binary A in campaign 3, to binary B in
	// campaign 4: campaign 4 reruns fcfs and reuses msf.
	pin := func(c *sweep.Campaign, sha string) {
		err := protocol.WritePins(t.Context(), st, &protocol.Pins{Campaign: c.ID, Policies: map[string]protocol.PluginPin{
			"fcfs": {Plugin: "fcfs", Engine: "0.1.0", SHA256: sha, Key: storage.PluginKey("fcfs", sha)}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	plug := func(sha string) *counting {
		// fcfs "runs in the plugin"; msf stays built-in.
		return &counting{as: &record.Impl{Engine: "0.1.0", Policy: "plugin:" + sha}}
	}
	fc, cc := qfig3(t, func(f *sweep.File) { f.Name = "pinned-a"; f.Policies = []any{"fcfs"} })
	pin(cc, "aaaa")
	runLocal(t, st, fc, plug("aaaa"))
	fd, cd := qfig3(t, func(f *sweep.File) { f.Name = "pinned-b"; f.Policies = []any{"fcfs"} })
	pin(cd, "bbbb")
	r = plug("bbbb")
	out = runLocal(t, st, fd, r)
	if out.Submit.Reused != 0 || len(r.ran) != len(cd.Tasks) {
		t.Fatalf("another plugin binary: %+v, %d ran; want all %d run", out.Submit, len(r.ran), len(cd.Tasks))
	}
	// Same binary again: everything reused.
	fe, ce := qfig3(t, func(f *sweep.File) { f.Name = "pinned-b2"; f.Policies = []any{"fcfs"} })
	pin(ce, "bbbb")
	r = plug("bbbb")
	out = runLocal(t, st, fe, r)
	if out.Submit.Reused != len(ce.Tasks) || len(r.ran) != 0 {
		t.Fatalf("same plugin binary: %+v, %d ran; want all reused", out.Submit, len(r.ran))
	}
}

// TestLegacyLayout: a storage directory written by the layout before the
// content-addressed store (full records under campaigns/<id>/results/) is
// converted: resubmitting its campaign runs nothing and summarises to the
// same bytes, and a grown campaign reuses its results.
func TestLegacyLayout(t *testing.T) {
	dir := t.TempDir()
	st, err := storage.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	fa, ca := qfig3(t, nil)
	runLocal(t, st, fa, worker.InProcess{})
	sum, err := st.Get(t.Context(), storage.SummaryKey(ca.ID))
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite to layout 1: the record in place, no store, no marker.
	for _, tk := range ca.Tasks {
		rec, data, err := record.Read(t.Context(), st, ca.ID, tk.ID)
		if err != nil || rec.Failed() {
			t.Fatal(err)
		}
		if err := st.Put(t.Context(), storage.ResultKey(ca.ID, tk.ID), data); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(dir + "/results"); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(t.Context(), storage.LayoutKey(ca.ID)); err != nil {
		t.Fatal(err)
	}
	// A legacy record decodes as itself, not as a reference.
	legacy, _ := st.Get(t.Context(), storage.ResultKey(ca.ID, ca.Tasks[0].ID))
	if _, ok := record.ParseRef(legacy); ok {
		t.Fatal("a full record parsed as a reference")
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(legacy, &probe) != nil || probe["result"] == nil {
		t.Fatalf("not a full record: %.200s", legacy)
	}

	r := &counting{}
	out := runLocal(t, st, fa, r)
	if len(r.ran) != 0 || out.Submit.AlreadyDone != len(ca.Tasks) || out.Submit.Published != 0 {
		t.Fatalf("resumed legacy campaign: %+v, %d ran", out.Submit, len(r.ran))
	}
	sum2, _ := st.Get(t.Context(), storage.SummaryKey(ca.ID))
	if !bytes.Equal(sum, sum2) {
		t.Fatalf("summary changed:\n%s\n%s", sum, sum2)
	}
	fb, cb := qfig3(t, grown)
	out = runLocal(t, st, fb, r)
	if out.Submit.Reused != len(ca.Tasks) || len(r.ran) != len(cb.Tasks)-len(ca.Tasks) {
		t.Fatalf("grown campaign after conversion: %+v, %d ran", out.Submit, len(r.ran))
	}
}
