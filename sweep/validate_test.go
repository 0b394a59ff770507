package sweep_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sweep"
)

// BadSweep is one file of testdata/bad: a sweep that must be refused, and
// the field its error must name (the file's first line, "# want: <field>").
type badSweep struct {
	name, path, want string
}

func badSweeps(t *testing.T) []badSweep {
	t.Helper()
	paths, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no bad sweeps: %v", err)
	}
	var out []badSweep
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(data), "\n")
		want, ok := strings.CutPrefix(first, "# want: ")
		if !ok {
			t.Fatalf("%s: first line must be \"# want: <field>\"", p)
		}
		out = append(out, badSweep{strings.TrimSuffix(filepath.Base(p), ".yaml"), p, want})
	}
	return out
}

// TestBadSweepsRefused: every bad sweep is refused by Load or Expand (with
// the built-in catalogue) with an error naming the field, without a panic
// (a panic fails the test) and without writing a file into its directory
// (Expand returns data only; the coordinator's test checks that a refused
// submit writes nothing to storage or the task stream).
func TestBadSweepsRefused(t *testing.T) {
	before, _ := os.ReadDir("testdata/bad")
	for _, b := range badSweeps(t) {
		t.Run(b.name, func(t *testing.T) {
			f, err := sweep.Load(b.path)
			if err == nil {
				var c *sweep.Campaign
				c, err = sweep.Expand(f, builtin.Catalog{})
				if err == nil {
					t.Fatalf("accepted: %d tasks", len(c.Tasks))
				}
			}
			if !strings.Contains(err.Error(), b.want) {
				t.Fatalf("error does not name %q: %v", b.want, err)
			}
		})
	}
	after, _ := os.ReadDir("testdata/bad")
	if len(after) != len(before) {
		t.Fatalf("testdata/bad had %d entries, now %d", len(before), len(after))
	}
}

// TestSharesNormalisedWithNote: shares that do not sum to 1 are normalised
// by the engine, and Expand says so once per distinct total.
func TestSharesNormalisedWithNote(t *testing.T) {
	f, err := sweep.Parse([]byte(`name: shares
servers: 4
classes: [{need: 1, share: 3, service: {dist: exp, mean: 1}}, {need: 4, share: 1, service: {dist: exp, mean: 1}}]
replications: 1
run: {arrivals: 100}
policies: [fcfs]
axes: {arrival_rate: [0.1, 0.2]}
`), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "shares sum to 4") || !strings.Contains(c.Warnings[0], "normalised") {
		t.Fatalf("warnings = %q, want one note that the shares (sum 4) are normalised", c.Warnings)
	}
	// Shares summing to 1 give no note.
	f.Classes[0].Share, f.Classes[1].Share = 0.75, 0.25
	if c, err = sweep.Expand(f, builtin.Catalog{}); err != nil || len(c.Warnings) != 0 {
		t.Fatalf("warnings = %q, err %v; want none", c.Warnings, err)
	}
}
