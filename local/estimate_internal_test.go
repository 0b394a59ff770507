package local

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sweep"
)

// planned plans a sweep written in YAML (tasks generated, not listed).
func planned(t *testing.T, yaml string) *sweep.Campaign {
	t.Helper()
	f, err := sweep.Parse([]byte(yaml), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sweep.Plan(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// classesOf files every task of c under its cost class.
func classesOf(t *testing.T, c *sweep.Campaign) *costClasses {
	t.Helper()
	cc := newCostClasses()
	if err := c.Each(func(task sweep.Task) error { _, err := cc.add(&task); return err }); err != nil {
		t.Fatal(err)
	}
	return cc
}

// rateList is n arrival rates 1, 2, …, n as a YAML list.
func rateList(n int) string {
	v := make([]string, n)
	for i := range v {
		v[i] = fmt.Sprint(i + 1)
	}
	return "[" + strings.Join(v, ", ") + "]"
}

// TestCostClasses: a class is one policy on one system, whatever its
// parameters and rate; each gets calibrations at its lowest and highest
// rate and evenly between, across its variants.
func TestCostClasses(t *testing.T) {
	c := planned(t, `
name: classes
workload: one-or-all
axes: {arrival_rate: `+rateList(9)+`}
policies: [fcfs, {name: msfq, threshold: [0, 10, 20, 31]}]
replications: 2
run: {arrivals: 1000}
`)
	cc := classesOf(t, c)
	// Two classes: fcfs (9 points) and msfq (4 variants × 9 rates).
	if len(cc.list) != 2 || len(cc.ofPoint) != 9*5 {
		t.Fatalf("%d classes over %d points, want 2 over 45", len(cc.list), len(cc.ofPoint))
	}
	if n := len(cc.list[1].variants); n != 4 {
		t.Fatalf("msfq class: %d variants, want 4", n)
	}
	cals := cc.plan()
	// 400 / 2 classes = 200 per class, capped at maxSamples = 5: ranks
	// round(j·8/4) = 0, 2, 4, 6, 8 of rates 1…9, i.e. rates 1, 3, 5, 7, 9.
	if len(cals) != 2*maxSamples {
		t.Fatalf("%d calibrations, want %d", len(cals), 2*maxSamples)
	}
	thresholds := map[any]bool{}
	for i, cal := range cals {
		if want := float64(1 + 2*(i%5)); cal.rate != want {
			t.Errorf("calibration %d at rate %v, want %v", i, cal.rate, want)
		}
		if cal.class == 1 {
			thresholds[cal.params["threshold"]] = true
		}
	}
	// Variant j·4/5 for j = 0…4: variants 0, 0, 1, 2, 3: all four sampled.
	if len(thresholds) != 4 {
		t.Errorf("msfq calibrations used thresholds %v, want all four", thresholds)
	}
}

// TestCostClassesBounded: 2,000 points of one policy are one class and
// maxSamples calibrations; one policy on 250 systems (a servers axis) at
// two loads is 250 classes of minSamples calibrations each (400 / 250
// rounds down to 1, raised to minSamples), not one per point.
func TestCostClassesBounded(t *testing.T) {
	many := planned(t, `
name: many-rates
workload: one-or-all
axes: {arrival_rate: `+rateList(2000)+`}
policies: [fcfs]
replications: 1
run: {arrivals: 1000}
`)
	if cals := classesOf(t, many).plan(); len(cals) != maxSamples {
		t.Errorf("2,000 rates of one class: %d calibrations, want %d", len(cals), maxSamples)
	}
	servers := make([]string, 250)
	for i := range servers {
		servers[i] = fmt.Sprint(i + 1)
	}
	wide := planned(t, `
name: many-systems
servers: 400
classes: [{need: 1, share: 1, service: {dist: exp, mean: 1}}]
axes: {servers: [`+strings.Join(servers, ", ")+`], load: [0.5, 0.7]}
policies: [fcfs]
replications: 1
run: {arrivals: 1000}
`)
	cc := classesOf(t, wide)
	if cals := cc.plan(); len(cc.list) != 250 || len(cals) != 250*minSamples {
		t.Errorf("%d classes, %d calibrations; want 250 and %d", len(cc.list), len(cals), 250*minSamples)
	}
}

// TestCostInterpolation: between calibrated rates the model is
// interpolated linearly; outside them it is the nearest one's.
func TestCostInterpolation(t *testing.T) {
	cc := &costClasses{list: []*costClass{{samples: []costSample{
		{rate: 1, m: costModel{setup: 0.1, perArrival: 1e-6}},
		{rate: 3, m: costModel{setup: 0.3, perArrival: 5e-6}},
	}}}}
	for _, tc := range []struct {
		rate              float64
		setup, perArrival float64
	}{
		{0.5, 0.1, 1e-6}, // below the lowest: the lowest's
		{1, 0.1, 1e-6},
		{2, 0.2, 3e-6},    // halfway: the means
		{2.5, 0.25, 4e-6}, // three quarters: 0.1 + 0.75·0.2, 1e-6 + 0.75·4e-6
		{9, 0.3, 5e-6},    // above the highest: the highest's
	} {
		m := cc.cost(0, tc.rate)
		if math.Abs(m.setup-tc.setup) > 1e-12 || math.Abs(m.perArrival-tc.perArrival) > 1e-18 {
			t.Errorf("cost at rate %v = %+v, want set-up %v, %v per arrival", tc.rate, m, tc.setup, tc.perArrival)
		}
	}
}

// TestPlanCampaignCalibratesClasses: the dry run of 400 points of two
// policies calibrates the two classes (real replications, in process),
// not the points, and its estimate counts every task.
func TestPlanCampaignCalibratesClasses(t *testing.T) {
	c := planned(t, `
name: plan-classes
workload: one-or-all
axes: {arrival_rate: `+rateList(200)+`}
policies: [fcfs, first-fit]
replications: 2
run: {arrivals: 200}
`)
	p, err := PlanCampaign(context.Background(), nil, c, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Points != 400 || p.ToRun != 800 || p.Classes != 2 || p.Calibrated != 2*maxSamples {
		t.Fatalf("plan: %d points, %d to run, %d classes, %d calibrated; want 400, 800, 2, %d", p.Points, p.ToRun, p.Classes, p.Calibrated, 2*maxSamples)
	}
	// Every task costs at least its farm overhead on one of two slots.
	if min := 800 * taskOverhead / 2; p.CPU <= 0 || p.Run < min || p.Wall != p.Run+p.Finalise {
		t.Errorf("estimate: CPU %v, run %v (want ≥ %v), wall %v = run + finalise %v", p.CPU, p.Run, min, p.Wall, p.Finalise)
	}
}

// TestSecondsClamped: an estimate past the longest Duration (292 years) is
// that Duration, not a wrapped negative one (2^50 arrivals a replication
// printed "-2562047h47m16s" of CPU).
func TestSecondsClamped(t *testing.T) {
	for _, c := range []struct {
		s    float64
		want time.Duration
	}{
		{1.5, 1500 * time.Millisecond},
		{0, 0},
		{float64(math.MaxInt64) / 1e9, math.MaxInt64},
		{1e300, math.MaxInt64},
	} {
		if got := seconds(c.s); got != c.want {
			t.Errorf("seconds(%g) = %v, want %v", c.s, got, c.want)
		}
	}
}
