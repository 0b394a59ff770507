package sweep_test

import (
	"encoding/json"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sweep"
)

// fuzzFormats are the formats FuzzParseExpand reads its input as.
var fuzzFormats = []string{"yaml", "toml", "json"}

// fuzzMaxTasks bounds the expansion a fuzz input may ask for: the fuzzer
// finds "replications: 1e9" quickly, and expanding it tests memory, not
// the parser (the size limits of a sweep are checked elsewhere).
const fuzzMaxTasks = 10000

// upperTasks is an upper bound of the tasks f expands to: every axis
// crossed, every policy entry's lists crossed, times the replications.
func upperTasks(f *sweep.File) float64 {
	n := float64(max(f.Replications, 1))
	for _, v := range f.Axes {
		n *= float64(max(len(v), 1))
	}
	pols := 0.0
	for _, p := range f.Policies {
		m := 1.0
		if e, ok := p.(map[string]any); ok {
			for _, v := range e {
				if l, ok := v.([]any); ok {
					m *= float64(max(len(l), 1))
				}
			}
		}
		pols += m
	}
	return n * max(pols, 1)
}

// FuzzParseExpand: parsing any bytes as a sweep file and expanding it with
// the built-in catalogue never panics, and an accepted campaign is
// consistent: every task hashes to its id, ids are unique, every point has
// its replications, and the whole campaign encodes as JSON (no NaN or
// Inf). Expand never opens a path (a trace is pinned by the sha256 in the
// file), so any trace block is expanded as given. Seed corpus: testdata/fuzz/FuzzParseExpand, which
// holds every file of testdata/bad.
func FuzzParseExpand(f *testing.F) {
	f.Add([]byte("name: x\nworkload: one-or-all\nreplications: 2\nrun: {arrivals: 100}\npolicies: [fcfs]\naxes: {load: [0.5]}\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, format uint8) {
		sf, err := sweep.Parse(data, fuzzFormats[int(format)%len(fuzzFormats)])
		if err != nil {
			return
		}
		if upperTasks(sf) > fuzzMaxTasks {
			t.Skip("too many tasks to expand in a fuzz run")
		}
		c, err := sweep.Expand(sf, builtin.Catalog{})
		if err != nil {
			return
		}
		if c.ID == "" || len(c.Tasks) != c.Points*sf.Replications {
			t.Fatalf("campaign %q: %d tasks for %d points × %d replications", c.ID, len(c.Tasks), c.Points, sf.Replications)
		}
		ids := map[string]bool{}
		for i := range c.Tasks {
			tk := &c.Tasks[i]
			if sweep.TaskID(*tk) != tk.ID || tk.ID == "" {
				t.Fatalf("task %d: id %q does not match its content", i, tk.ID)
			}
			if ids[tk.ID] {
				t.Fatalf("task %d: duplicate id %s", i, tk.ID)
			}
			ids[tk.ID] = true
		}
		if _, err := json.Marshal(c.Tasks); err != nil {
			t.Fatalf("tasks do not encode: %v", err)
		}
		if _, err := json.Marshal(c); err != nil {
			t.Fatalf("campaign does not encode: %v", err)
		}
	})
}
