package reproduce_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/results/reproduce"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

const spec = `name: archive
seed: 3
workload: one-or-all
axes:
  arrival_rate: [1, 2]
policies: [fcfs, msf]
replications: 2
run: {arrivals: 500, warmup: 50}
`

// archived stores spec and a record for every task but the last (which
// stays pending), as workers would, without a manifest.
func archived(t *testing.T) (storage.Store, *sweep.Campaign) {
	t.Helper()
	ctx := t.Context()
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := sweep.Parse([]byte(spec), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	camp, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, storage.CampaignSpecKey(camp.ID), []byte(spec)); err != nil {
		t.Fatal(err)
	}
	for _, task := range camp.Tasks[:len(camp.Tasks)-1] {
		out, err := worker.InProcess{}.Run(ctx, &task, nil)
		if err != nil {
			t.Fatal(err)
		}
		put(t, st, camp.ID, &record.Record{Task: task, Result: out.Result, Provenance: record.Provenance{Runner: out.Provenance.Runner}})
	}
	return st, camp
}

func put(t *testing.T, st storage.Store, id string, r *record.Record) {
	t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(context.Background(), storage.ResultKey(id, r.Task.ID), data); err != nil {
		t.Fatal(err)
	}
}

// TestRun: stored results re-run bit-identical; a tampered result
// is reported as different (naming the field), a failure as an error.
func TestRun(t *testing.T) {
	st, camp := archived(t)
	ctx := t.Context()
	a, err := archive.Load(ctx, st, camp.ID, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	n := len(camp.Tasks)
	if len(a.Tasks) != n || len(a.Records) != n-1 || a.Manifest != nil {
		t.Fatalf("%d tasks, %d records, manifest %v", len(a.Tasks), len(a.Records), a.Manifest)
	}
	all, err := reproduce.ChooseTasks(a, "", 0, true, 1)
	if err != nil || len(all) != n-1 {
		t.Fatalf("all: %v, %v", all, err)
	}
	for _, r := range reproduce.Run(ctx, a, all, 2, nil) {
		if r.Verdict != reproduce.Same {
			t.Fatalf("task %s: %s (%s)", r.Task.ID, r.Verdict, r.Detail)
		}
	}
	// Tamper with one result, fail another.
	r0 := *a.Records[all[0]]
	res := *r0.Result
	res.Throughput *= 2
	r0.Result = &res
	put(t, st, camp.ID, &r0)
	put(t, st, camp.ID, &record.Record{Task: a.Records[all[1]].Task, Error: "boom"})
	if a, err = archive.Load(ctx, st, camp.ID, builtin.Catalog{}); err != nil {
		t.Fatal(err)
	}
	got := reproduce.Run(ctx, a, all[:2], 1, nil)
	if got[0].Verdict != reproduce.Different || !strings.Contains(got[0].Detail, "throughput") {
		t.Errorf("tampered: %s (%s)", got[0].Verdict, got[0].Detail)
	}
	if got[1].Verdict != reproduce.Error || !strings.Contains(got[1].Detail, "boom") {
		t.Errorf("failed: %s (%s)", got[1].Verdict, got[1].Detail)
	}
}

// TestChooseTasks: a sample is drawn from the tasks with a result, in
// campaign order, and is the same for the same seed; a listed task must
// belong to the campaign.
func TestChooseTasks(t *testing.T) {
	st, camp := archived(t)
	a, err := archive.Load(t.Context(), st, camp.ID, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, task := range a.Tasks {
		pos[task.ID] = i
	}
	s1, err := reproduce.ChooseTasks(a, "", 3, false, 7)
	if err != nil || len(s1) != 3 {
		t.Fatalf("sample: %v, %v", s1, err)
	}
	s2, _ := reproduce.ChooseTasks(a, "", 3, false, 7)
	for i := range s1 {
		if s1[i] != s2[i] || a.Records[s1[i]] == nil || (i > 0 && pos[s1[i]] <= pos[s1[i-1]]) {
			t.Fatalf("samples %v and %v", s1, s2)
		}
	}
	if _, err := reproduce.ChooseTasks(a, "nosuchtask", 0, false, 1); err == nil {
		t.Error("unknown task: no error")
	}
	if _, err := archive.Load(t.Context(), st, "nosuchcampaign", builtin.Catalog{}); err == nil {
		t.Error("unknown campaign: no error")
	}
}

// TestModifiedAfterFinalisation: with the campaign's checksums recorded,
// a result object modified afterwards (its task still hashing to its id,
// so record.Read accepts it) is left out of the archive with a warning
// naming the key, and reproduce reports it as different without running
// it; a checksums object that does not hash to the manifest's record of
// it is not trusted, with a warning.
//
// Complexity 26: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestModifiedAfterFinalisation(t *testing.T) {
	st, camp := archived(t)
	ctx := t.Context()
	var ids []string
	for _, task := range camp.Tasks {
		ids = append(ids, task.ID)
	}
	sums, modified, err := archive.Checksums(ctx, st, camp.ID, ids, nil)
	if err != nil || len(modified) != 0 {
		t.Fatal(err, modified)
	}
	if got := strings.Count(string(sums), "\n"); got != len(ids)-1 {
		t.Fatalf("%d checksum lines for %d stored results:\n%s", got, len(ids)-1, sums)
	}
	if err := st.Put(ctx, storage.ChecksumsKey(camp.ID), sums); err != nil {
		t.Fatal(err)
	}
	a, err := archive.Load(ctx, st, camp.ID, builtin.Catalog{})
	if err != nil || len(a.Modified) != 0 || len(a.Warnings) != 0 {
		t.Fatalf("untouched campaign: %v, modified %v, warnings %v", err, a.Modified, a.Warnings)
	}
	victim := ids[1]
	r := *a.Records[victim]
	res := *r.Result
	res.Throughput *= 2
	r.Result = &res
	put(t, st, camp.ID, &r)
	if a, err = archive.Load(ctx, st, camp.ID, builtin.Catalog{}); err != nil {
		t.Fatal(err)
	}
	key := storage.ResultKey(camp.ID, victim)
	if a.Records[victim] != nil || !strings.Contains(a.Modified[victim], key) ||
		len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], key) || len(a.Records) != len(ids)-2 {
		t.Fatalf("modified result: record %v, modified %q, warnings %v", a.Records[victim] != nil, a.Modified[victim], a.Warnings)
	}
	all, err := reproduce.ChooseTasks(a, "", 0, true, 1)
	if err != nil || len(all) != len(ids)-1 {
		t.Fatalf("chosen %v, %v", all, err)
	}
	got := reproduce.Run(ctx, a, []string{victim}, 1, nil)
	if got[0].Verdict != reproduce.Different || !strings.Contains(got[0].Detail, "modified after it was written") ||
		!strings.Contains(got[0].Detail, key) {
		t.Fatalf("reproduce of a modified result: %s (%s)", got[0].Verdict, got[0].Detail)
	}

	// The manifest's hash of the checksums object guards the object.
	m := archive.Manifest{Campaign: camp.ID, ChecksumsSHA256: archive.SHA256(sums)}
	mj, _ := json.Marshal(&m)
	if err := st.Put(ctx, storage.ManifestKey(camp.ID), mj); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, storage.ChecksumsKey(camp.ID), append(sums, sums[:80]...)); err != nil {
		t.Fatal(err)
	}
	if a, err = archive.Load(ctx, st, camp.ID, builtin.Catalog{}); err != nil {
		t.Fatal(err)
	}
	if len(a.Modified) != 0 || len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], storage.ChecksumsKey(camp.ID)+" was modified") {
		t.Fatalf("tampered checksums: modified %v, warnings %v", a.Modified, a.Warnings)
	}
}

// TestForeignTaskLeftOut: a record stored in the campaign under its own
// task's id (so it passes record.Read's check) whose task the sweep does
// not generate is left out of the archive, with a warning naming the key.
func TestForeignTaskLeftOut(t *testing.T) {
	st, camp := archived(t)
	ctx := t.Context()
	a, err := archive.Load(ctx, st, camp.ID, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	forged := *a.Records[camp.Tasks[0].ID]
	forged.Task.ArrivalRate *= 3
	forged.Task.ID = sweep.TaskID(forged.Task)
	put(t, st, camp.ID, &forged)
	if a, err = archive.Load(ctx, st, camp.ID, builtin.Catalog{}); err != nil {
		t.Fatal(err)
	}
	key := storage.ResultKey(camp.ID, forged.Task.ID)
	if a.Records[forged.Task.ID] != nil || len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], key) {
		t.Fatalf("foreign record: kept %v, warnings %v", a.Records[forged.Task.ID] != nil, a.Warnings)
	}
	for _, task := range a.Tasks {
		if task.ID == forged.Task.ID {
			t.Fatal("the foreign task is among the campaign's tasks")
		}
	}
}

// TestDeletedAfterFinalisation: a stored result the campaign finalised
// with (its checksums list it) and that is gone since — an archive with a
// member taken out, a store pruned by hand — is a missing result, not a
// task that never ran: reproduce chooses it with --all and reports it
// (exit 1), where it re-ran the others and said all were bit-identical.
func TestDeletedAfterFinalisation(t *testing.T) {
	st, camp := archived(t)
	ctx := t.Context()
	victim := camp.Tasks[len(camp.Tasks)-1] // the one task archived leaves unrun
	out, err := worker.InProcess{}.Run(ctx, &victim, nil)
	if err != nil {
		t.Fatal(err)
	}
	ck, _, err := record.Store(ctx, st, camp.ID, &record.Record{Task: victim, Result: out.Result, Provenance: record.Provenance{Runner: out.Provenance.Runner, Engine: out.Result.Engine}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, task := range camp.Tasks {
		ids = append(ids, task.ID)
	}
	sums, _, err := archive.Checksums(ctx, st, camp.ID, ids, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, storage.ChecksumsKey(camp.ID), sums); err != nil {
		t.Fatal(err)
	}
	key := storage.StoredResultKey(ck)
	if err := st.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	a, err := archive.Load(ctx, st, camp.ID, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.Modified[victim.ID], "which is missing: it was there when the campaign finalised") || !strings.Contains(a.Modified[victim.ID], key) {
		t.Fatalf("deleted result: modified %q, warnings %v", a.Modified[victim.ID], a.Warnings)
	}
	all, err := reproduce.ChooseTasks(a, "", 0, true, 1)
	if err != nil || !slices.Contains(all, victim.ID) {
		t.Fatalf("chosen %v, %v", all, err)
	}
	got := reproduce.Run(ctx, a, []string{victim.ID}, 1, nil)
	if got[0].Verdict == reproduce.Same || !strings.Contains(got[0].Detail, "missing") {
		t.Fatalf("reproduce of a deleted result: %s (%s)", got[0].Verdict, got[0].Detail)
	}
}
