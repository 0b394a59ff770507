package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
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

// A scenario encoded once, with a point's hash and its seeds assembled
// around it, hashes as the maps they stand for, whatever its strings and
// numbers hold (encoding/json escapes <, >, & and U+2028/9 in strings
// and sorts map keys: the assembly must agree).
func TestEncodedScenarioHashesAsMap(t *testing.T) {
	for _, scenario := range []map[string]any{
		{"workload": map[string]any{"name": "a<b>&c\u2028d\u2029\"é\x01", "rate": 1e21}, "arrival_rate": 1e-7, "interarrival": nil, "trace": nil},
		{"workload": []any{math.Copysign(0, -1), 0.1, 5e-324, 1.7976931348623157e308, int64(123456789012345678)}, "arrival_rate": 7.5, "trace": map[string]any{"file": "<x>.swf"}},
	} {
		sb, err := json.Marshal(scenario)
		if err != nil {
			t.Fatal(err)
		}
		params := map[string]any{"threshold": 31, "name": "&<>\u2028"}
		pj, err := json.Marshal(params)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"msfq", "a<&>\u2029\"b"} {
			head, err := pointHead(name, pj)
			if err != nil {
				t.Fatal(err)
			}
			v := variant{pointHead: head}
			want, _ := hashHex(map[string]any{"scenario": scenario, "policy": name, "params": params}, 16)
			if got := v.pointHash(sb); got != want {
				t.Errorf("%s, policy %q: point hash %s from the encoded scenario, %s from the map", sb, name, got, want)
			}
		}
		if hashOf(sb, 16) != must(hashHex(scenario, 16)) {
			t.Errorf("%s: the scenario's hash differs from the map's", sb)
		}
		d := newSeedDeriver(5, sb)
		for rep := range 3 {
			if d.seed(rep) != deriveSeed(5, rep, scenario) {
				t.Errorf("%s: replication %d's seed differs from deriveSeed's", sb, rep)
			}
		}
	}
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}
