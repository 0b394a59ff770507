package sweep

import (
	"strings"
	"testing"
)

const precBase = "name: p\nseed: 3\nworkload: one-or-all\naxes: {arrival_rate: [1, 2]}\npolicies: [fcfs, {name: testpol, threshold: [1, 31]}]\nrun: {arrivals: 100}\n"

// TestReplicate: the replications Replicate adds to a point are exactly the
// tasks a sweep with more replications expands to (ids, seeds, order).
func TestReplicate(t *testing.T) {
	f, err := Parse([]byte(precBase+"replications: 2\nprecision: {metric: mean_response, rel_half_width: 0.05, max_replications: 7}\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	small, err := Expand(f, testCatalog{})
	if err != nil {
		t.Fatal(err)
	}
	g := *f
	g.Replications, g.Precision = 7, nil
	big, err := Expand(&g, testCatalog{})
	if err != nil {
		t.Fatal(err)
	}
	if len(small.Tasks) != 2*small.Points || len(big.Tasks) != 7*big.Points || small.Points != 6 {
		t.Fatalf("%d/%d tasks, %d points", len(small.Tasks), len(big.Tasks), small.Points)
	}
	for i := 0; i < len(small.Tasks); i += 2 {
		tmpl := small.Tasks[i]
		for r := 0; r < 7; r++ {
			want := big.Tasks[i/2*7+r]
			got := Replicate(tmpl, f.Seed, r)
			if got.ID != want.ID || got.Seed != want.Seed || got.Point != want.Point || got.Replication != r || TaskID(got) != got.ID {
				t.Fatalf("point %d rep %d: got %s seed %d, want %s seed %d", i/2, r, got.ID, got.Seed, want.ID, want.Seed)
			}
		}
	}
	// The precision block changes the campaign id (it changes what runs),
	// but not the task ids.
	if small.ID == big.ID || small.Tasks[0].ID != big.Tasks[0].ID {
		t.Fatalf("campaign ids %s %s, first tasks %s %s", small.ID, big.ID, small.Tasks[0].ID, big.Tasks[0].ID)
	}
}

func TestPrecisionValidation(t *testing.T) {
	ok := []string{
		"{metric: mean_response, rel_half_width: 0.05, max_replications: 200, batch: 10}",
		"{metric: weighted_mean_response, rel_half_width: 0.1, max_replications: 3}",
		"{metric: class1_heavy_mean_response, rel_half_width: 0.1, max_replications: 3}",
		"{metric: counter_phase1_time, rel_half_width: 0.1, max_replications: 3}",
	}
	for _, p := range ok {
		f, err := Parse([]byte(precBase+"replications: 3\nprecision: "+p+"\n"), "yaml")
		if err == nil {
			_, err = Expand(f, testCatalog{})
		}
		if err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, tc := range []struct{ p, want string }{
		{"{metric: mean_responze, rel_half_width: 0.05, max_replications: 200}", `precision.metric: unknown metric "mean_responze"`},
		{"{metric: class1_mean_response, rel_half_width: 0.05, max_replications: 200}", `precision.metric: unknown metric "class1_mean_response"`},
		{"{rel_half_width: 0.05, max_replications: 200}", "precision.metric: required"},
		{"{metric: mean_response, rel_half_width: 0, max_replications: 200}", "precision.rel_half_width: must be a fraction in (0, 1)"},
		// A percentage written as a number: ±500%, met by the first replications.
		{"{metric: mean_response, rel_half_width: 5, max_replications: 200}", "precision.rel_half_width: must be a fraction in (0, 1)"},
		{"{metric: mean_response, rel_half_width: -0.1, max_replications: 200}", "precision.rel_half_width: must be a fraction in (0, 1)"},
		{"{metric: mean_response, rel_half_width: 0.05, max_replications: 2}", "precision.max_replications: must be >= replications (3"},
		{"{metric: mean_response, rel_half_width: 0.05, max_replications: 20, batch: -1}", "precision.batch: must be >= 1"},
		{"{metric: mean_response, rel_half_width: 0.05, max_replication: 20}", "max_replication"},
	} {
		f, err := Parse([]byte(precBase+"replications: 3\nprecision: "+tc.p+"\n"), "yaml")
		if err == nil {
			_, err = Expand(f, testCatalog{})
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.p, err, tc.want)
		}
	}
}
