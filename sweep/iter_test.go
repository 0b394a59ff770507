package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestGeneratedTasks: the tasks a planned campaign generates (Each, TaskAt
// in any order) are Expand's, their ids are TaskID of their content, the
// seeds deriveSeed's, and TaskListHash hashes the ids in order.
func TestGeneratedTasks(t *testing.T) {
	f, err := Load("testdata/fig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Expand(f, testCatalog{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Plan(f, testCatalog{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Tasks != nil || c.Len() != len(want.Tasks) || c.ID != want.ID || c.Points != want.Points {
		t.Fatalf("plan: %d tasks held, Len %d, id %s, %d points; expansion %d tasks, id %s, %d points",
			len(c.Tasks), c.Len(), c.ID, c.Points, len(want.Tasks), want.ID, want.Points)
	}
	h := sha256.New()
	i := 0
	if err := c.Each(func(tk Task) error {
		if !reflect.DeepEqual(tk, want.Tasks[i]) {
			t.Fatalf("task %d: %+v, expansion %+v", i, tk, want.Tasks[i])
		}
		if TaskID(tk) != tk.ID {
			t.Fatalf("task %d: id %s, content hashes to %s", i, tk.ID, TaskID(tk))
		}
		scenario := map[string]any{"workload": tk.Workload, "arrival_rate": tk.ArrivalRate, "interarrival": tk.Interarrival, "trace": tk.Trace}
		if s := deriveSeed(f.Seed, tk.Replication, scenario); s != tk.Seed {
			t.Fatalf("task %d: seed %d, derived %d", i, tk.Seed, s)
		}
		h.Write([]byte(tk.ID + "\n"))
		i++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if i != c.Len() {
		t.Fatalf("Each gave %d tasks, Len %d", i, c.Len())
	}
	if got, err := c.TaskListHash(); err != nil || got != hex.EncodeToString(h.Sum(nil)) {
		t.Fatalf("TaskListHash %s (%v)", got, err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, j := range r.Perm(c.Len()) {
		tk, err := c.TaskAt(j)
		if err != nil || !reflect.DeepEqual(tk, want.Tasks[j]) {
			t.Fatalf("TaskAt(%d): %+v (%v), expansion %+v", j, tk, err, want.Tasks[j])
		}
	}
	if _, err := c.TaskAt(c.Len()); err == nil {
		t.Fatal("TaskAt past the end: no error")
	}
}
