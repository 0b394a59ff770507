package archive

import (
	"testing"

	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sweep"
)

// TestTasksFromManifestOnce: a version-1 manifest's task list, read for a
// spec that does not expand here, counts each task once. An archive whose
// manifest repeated one task 50 times showed its point with n = 50 and a
// zero-width interval, and reproduce said "50 bit-identical".
func TestTasksFromManifestOnce(t *testing.T) {
	recs := map[string]*record.Record{
		"a": {Task: sweep.Task{ID: "a", Replication: 0}},
		"b": {Task: sweep.Task{ID: "b", Replication: 1}},
	}
	seeds := []TaskSeed{{Task: "a"}, {Task: "b"}, {Task: "missing"}}
	for range 48 {
		seeds = append(seeds, TaskSeed{Task: "a"})
	}
	a := &Archive{Manifest: &Manifest{Seeds: seeds}, Records: recs}
	a.tasksFromManifest()
	if len(a.Tasks) != 2 || a.Tasks[0].ID != "a" || a.Tasks[1].ID != "b" {
		t.Fatalf("tasks %v, want a and b once each, in the manifest's order", a.Tasks)
	}
}
