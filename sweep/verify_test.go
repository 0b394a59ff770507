package sweep_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sweep"
)

func TestCheckVerify(t *testing.T) {
	for _, c := range []struct {
		f  float64
		ok bool
	}{{0, true}, {0.01, true}, {1, true}, {-0.01, false}, {1.0001, false}, {math.NaN(), false}, {math.Inf(1), false}} {
		err := sweep.CheckVerify(c.f)
		if (err == nil) != c.ok {
			t.Errorf("CheckVerify(%v) = %v, want ok %v", c.f, err, c.ok)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "verify: must be a fraction in [0, 1]") {
			t.Errorf("CheckVerify(%v): %v does not name the field", c.f, err)
		}
	}
}

// TestSampled: the sample is a function of (fraction, seed, task id)
// alone, and its size is binomial. 10^4 ids at f = 0.01: n·f = 100,
// σ = √(n·f·(1−f)) = 9.95, so [60, 140] is ±4σ (a fixed seed: the count
// is deterministic, the band says the hash is not biased).
func TestSampled(t *testing.T) {
	n := 0
	for i := range 10000 {
		id := fmt.Sprintf("%024x", uint64(i)*2654435761)
		a := sweep.Sampled(0.01, 7, id)
		if a != sweep.Sampled(0.01, 7, id) {
			t.Fatal("not deterministic")
		}
		if a {
			n++
		}
		if sweep.Sampled(0, 7, id) || !sweep.Sampled(1, 7, id) {
			t.Fatal("f = 0 must sample nothing and f = 1 everything")
		}
	}
	if n < 60 || n > 140 {
		t.Fatalf("%d of 10000 sampled at f = 0.01, want 100 ± 40", n)
	}
	// Another seed samples other tasks.
	same := 0
	for i := range 10000 {
		id := fmt.Sprintf("%024x", uint64(i)*2654435761)
		if sweep.Sampled(0.5, 7, id) == sweep.Sampled(0.5, 8, id) {
			same++
		}
	}
	if same < 4800 || same > 5200 { // 5000 ± 4σ (σ = 50)
		t.Fatalf("seeds 7 and 8 agree on %d of 10000 at f = 0.5, want about half", same)
	}
}

// TestVerifyInSweepFile: verify is read from the file, validated with the
// file's position, and is not part of the campaign id.
func TestVerifyInSweepFile(t *testing.T) {
	base := "name: v\nseed: 1\nservers: 2\nclasses:\n  - {need: 1, share: 1, service: {dist: exp, mean: 1}}\naxes:\n  arrival_rate: [1]\npolicies: [fcfs]\nreplications: 2\nrun: {arrivals: 1000}\n"
	f0, err := sweep.Parse([]byte(base), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	c0, err := sweep.Plan(f0, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	f1, err := sweep.Parse([]byte(base+"verify: 0.25\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f1.Verify != 0.25 {
		t.Fatalf("verify read as %v", f1.Verify)
	}
	c1, err := sweep.Plan(f1, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	if c0.ID != c1.ID {
		t.Fatalf("verify changed the campaign id: %s → %s", c0.ID, c1.ID)
	}
	f2, err := sweep.Parse([]byte(base+"verify: 1.5\n"), "yaml")
	if err == nil {
		_, err = sweep.Plan(f2, builtin.Catalog{})
	}
	if err == nil || !strings.Contains(err.Error(), "verify: must be a fraction in [0, 1]") || !strings.Contains(err.Error(), "line 11") {
		t.Fatalf("verify: 1.5 gave %v, want the field, its line (11) and the reason", err)
	}
}
