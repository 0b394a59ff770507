package sweep_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sweep"
)

// PlanWithin refuses a sweep past its size before planning a point: its
// points are the product of its axes' lengths and its policy variants.
// Two axes of 3000 values (a 40 KB file, 9·10^6 points) planned for
// minutes, and grew, before the limit counted them. Hand count below:
// 3000 × 3000 × 2 policies = 1.8·10^7 points, × 3 replications = 5.4·10^7
// tasks.
func TestPlanWithinCountsFirst(t *testing.T) {
	var rates, shares []string
	for i := range 3000 {
		rates = append(rates, fmt.Sprint(1+i))
		shares = append(shares, fmt.Sprint(0.1+float64(i)*1e-4))
	}
	src := "name: big\nworkload: one-or-all\naxes:\n  arrival_rate: [" + strings.Join(rates, ", ") + "]\n  class[0].share: [" + strings.Join(shares, ", ") + "]\npolicies: [fcfs, msf]\nreplications: 3\nrun: {arrivals: 1e3}\n"
	f, err := sweep.Parse([]byte(src), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = sweep.PlanWithin(f, builtin.Catalog{}, sweep.Size{Points: 1e6, Tasks: 1e7})
	tl, ok := errors.AsType[*sweep.TooLargeError](err)
	if !ok || tl.Points != 18_000_000 || tl.Tasks != 54_000_000 || tl.Replications != 3 {
		t.Fatalf("want 1.8e7 points and 5.4e7 tasks refused, got %v", err)
	}
}
