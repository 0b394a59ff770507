package local

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// The dry run's estimate calibrates scenario classes, not points. A
// replication's cost per arrival is decided by the policy, the system (the
// workload's classes and servers, the arrival process or the trace) and
// the load (how many jobs the policy looks at per event); a campaign of
// 10^5 points has a handful of classes, each swept over rates. Calibrating
// every point made a 10^5-point dry run run 2·10^5 short replications
// (1.5 minutes, 1.7 GB resident, for a campaign of two minutes); a class
// is calibrated at a few rates spread over its range and the points in
// between are interpolated.

// costClass is the tasks whose cost per arrival differs only through the
// arrival rate and the policy's parameters: one policy on one system.
type costClass struct {
	// tmpl is the class's first task: a calibration runs it at a sample's
	// rate with a sample's parameters.
	tmpl sweep.Task
	// rates are the class's distinct arrival rates (one, 0, for a trace).
	rates map[float64]bool
	// variants are the distinct parameter sets of the policy, in order.
	variants   []map[string]any
	variantKey map[string]bool
	// samples are the calibrated rates, in increasing order.
	samples []costSample
}

// costSample is a class's calibrated cost at one arrival rate.
type costSample struct {
	rate float64
	m    costModel
}

// Calibration bounds: every class gets at least minSamples rates (fewer
// if it has fewer), at most maxSamples, and the whole dry run about
// maxCalibrations, so that a sweep of many policy variants on many
// systems still plans in seconds.
const (
	minSamples      = 2
	maxSamples      = 5
	maxCalibrations = 400
)

// costClasses groups a campaign's points into cost classes.
type costClasses struct {
	list []*costClass
	byID map[string]int
	// ofPoint maps a point to its class (every task of a point is alike).
	ofPoint map[string]int
}

func newCostClasses() *costClasses {
	return &costClasses{byID: map[string]int{}, ofPoint: map[string]int{}}
}

// add files t's point under its class and returns the class's index.
func (cc *costClasses) add(t *sweep.Task) (int, error) {
	if i, ok := cc.ofPoint[t.Point]; ok {
		return i, nil
	}
	key, err := json.Marshal([]any{t.Policy, t.Workload, t.Interarrival, t.Trace})
	if err != nil {
		return 0, fmt.Errorf("point %s: %w", t.Point, err)
	}
	i, ok := cc.byID[string(key)]
	if !ok {
		i = len(cc.list)
		cc.byID[string(key)] = i
		cc.list = append(cc.list, &costClass{tmpl: *t, rates: map[float64]bool{}, variantKey: map[string]bool{}})
	}
	c := cc.list[i]
	c.rates[t.ArrivalRate] = true
	vk, err := json.Marshal(t.Params)
	if err != nil {
		return 0, fmt.Errorf("point %s: %w", t.Point, err)
	}
	if !c.variantKey[string(vk)] {
		c.variantKey[string(vk)] = true
		c.variants = append(c.variants, t.Params)
	}
	cc.ofPoint[t.Point] = i
	return i, nil
}

// calibration is one short replication to run: class c at rate with the
// policy's parameters params.
type calibration struct {
	class  int
	rate   float64
	params map[string]any
}

// plan chooses the calibrations: per class, rates at evenly spaced ranks
// of its sorted rates (its lowest and highest always), each with another
// of its variants, so that a class swept over a parameter is sampled
// across it too.
func (cc *costClasses) plan() []calibration {
	per := min(max(maxCalibrations/max(len(cc.list), 1), minSamples), maxSamples)
	var out []calibration
	for ci, c := range cc.list {
		rates := make([]float64, 0, len(c.rates))
		for r := range c.rates {
			rates = append(rates, r)
		}
		sort.Float64s(rates)
		s := min(per, len(rates))
		seen := map[int]bool{}
		for j := range s {
			k := 0
			if s > 1 {
				k = int(math.Round(float64(j) * float64(len(rates)-1) / float64(s-1)))
			}
			if seen[k] {
				continue
			}
			seen[k] = true
			v := c.variants[(j*len(c.variants)/s)%len(c.variants)]
			out = append(out, calibration{class: ci, rate: rates[k], params: v})
		}
	}
	return out
}

// calibrateTwice runs t at n/4 (at least 500) and n arrivals, with the
// trace it replays, if any, from traces.
func calibrateTwice(ctx context.Context, traces *calibrationTraces, t sweep.Task, n int64, plugins worker.Runner) (cpu1 time.Duration, n1 int64, cpu2 time.Duration, n2 int64, err error) {
	if ctx, err = traces.attach(ctx, &t); err != nil {
		return 0, 0, 0, 0, err
	}
	if cpu1, _, n1, err = calibrate(ctx, t, max(n/4, 500), plugins); err != nil {
		return 0, 0, 0, 0, err
	}
	cpu2, _, n2, err = calibrate(ctx, t, n, plugins)
	return cpu1, n1, cpu2, n2, err
}

// cost is the model of class ci at rate: set-up and cost per arrival
// interpolated linearly between the calibrated rates around it (the
// nearest one outside them).
func (cc *costClasses) cost(ci int, rate float64) costModel {
	s := cc.list[ci].samples
	switch {
	case len(s) == 0:
		return costModel{}
	case rate <= s[0].rate:
		return s[0].m
	case rate >= s[len(s)-1].rate:
		return s[len(s)-1].m
	}
	i := sort.Search(len(s), func(i int) bool { return s[i].rate >= rate })
	a, b := s[i-1], s[i]
	w := (rate - a.rate) / (b.rate - a.rate)
	return costModel{setup: a.m.setup + w*(b.m.setup-a.m.setup), perArrival: a.m.perArrival + w*(b.m.perArrival-a.m.perArrival)}
}

// calibrateClasses runs the calibrations, par at once, each at two
// lengths (n/4 and n arrivals: the set-up of a replication, building the
// workload and the policy's state, is separated from the cost per
// arrival), and stores the fitted models in their classes. It returns
// the calibrations' total CPU time. A trace campaign's calibrations
// replay the trace traces gives them.
func (cc *costClasses) calibrateClasses(ctx context.Context, cals []calibration, n int64, par int, traces *calibrationTraces, plugins worker.Runner) (time.Duration, error) {
	var (
		mu       sync.Mutex
		total    time.Duration
		firstErr error
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, max(par, 1))
	for _, cal := range cals {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			t := cc.list[cal.class].tmpl
			t.ArrivalRate, t.Params = cal.rate, cal.params
			cpu1, n1, cpu2, n2, err := calibrateTwice(ctx, traces, t, n, plugins)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					at := fmt.Sprintf("at arrival rate %v", cal.rate)
					if t.Trace != nil {
						at = "on the trace"
					}
					firstErr = fmt.Errorf("calibrating %s %s: %w", t.Policy, at, err)
				}
				return
			}
			total += cpu1 + cpu2
			c := cc.list[cal.class]
			c.samples = append(c.samples, costSample{rate: cal.rate, m: fitCost(cpu1.Seconds(), float64(n1), cpu2.Seconds(), float64(n2))})
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	for _, c := range cc.list {
		slices.SortFunc(c.samples, func(a, b costSample) int { return cmp.Compare(a.rate, b.rate) })
	}
	return total, nil
}
