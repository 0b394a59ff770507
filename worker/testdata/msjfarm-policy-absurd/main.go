// Command msjfarm-policy-absurd is a test plugin for the worker's result
// check: built against the SDK, each of its reference models runs an
// honest FCFS replication and then returns one kind of impossible result
// (named after the model). The worker must store none of them, retry none,
// and name the field and this binary's sha256 in each failure.
package main

import (
	"math"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim"
)

// lies are the absurd results, by reference model name.
var lies = map[string]func(r *sim.Result){
	"negative-mean": func(r *sim.Result) { r.Overall.MeanResponse = -r.Overall.MeanResponse },
	"utilization":   func(r *sim.Result) { r.Utilization = 1.7 },
	"huge-means": func(r *sim.Result) {
		r.Overall.MeanResponse, r.Overall.MeanWait = 1e300, 1e300
		for i := range r.Classes {
			r.Classes[i].MeanResponse, r.Classes[i].MeanWait = 1e300, 1e300
		}
	},
	"nine-classes": func(r *sim.Result) {
		for len(r.Classes) < 9 {
			r.Classes = append(r.Classes, r.Classes[0])
		}
	},
	"arrivals": func(r *sim.Result) { r.Arrivals *= 2 },
	"seed":     func(r *sim.Result) { r.Seed++ },
	"servers":  func(r *sim.Result) { r.Servers *= 2 },
	"engine":   func(r *sim.Result) { r.Engine = "9.9.9-forged" },
	"oversize": func(r *sim.Result) {
		// 2e5 samples, about 4 MB of JSON.
		r.Series = make([]sim.Sample, 200000)
		for i := range r.Series {
			r.Series[i] = sim.Sample{T: float64(i) + 0.123456789, N: 100000 + i}
		}
	},
	"nan": func(r *sim.Result) { r.Overall.MeanResponse = math.NaN() },
	"secret-counter": func(r *sim.Result) {
		r.Counters = append(r.Counters, sim.Counter{Name: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", Value: 1})
	},
	"little": func(r *sim.Result) { r.MeanInSystem *= 1.5 },
	// Every time, size and number in system halved alike: response =
	// wait + size, Little's law and the class-weighted means still hold.
	"halved": func(r *sim.Result) {
		half := func(cs *sim.ClassStats) {
			cs.MeanResponse, cs.MeanWait, cs.MeanSize, cs.VarResponse = cs.MeanResponse/2, cs.MeanWait/2, cs.MeanSize/2, cs.VarResponse/4
		}
		half(&r.Overall)
		for i := range r.Classes {
			half(&r.Classes[i])
		}
		r.MeanInSystem, r.MeanInQueue, r.WeightedMeanResponse = r.MeanInSystem/2, r.MeanInQueue/2, r.WeightedMeanResponse/2
	},
	// One measured job counted in another class (the overall counts kept).
	"class-moved": func(r *sim.Result) { r.Classes[0].Count--; r.Classes[1].Count++ },
	// another-rate runs at 0.8 times the task's arrival rate (see main):
	// every number its own run's, the offered load the task's.
	"another-rate": func(r *sim.Result) {},
}

// slower is the arrival rate's factor of another-rate's run.
const slower = 0.8

func main() {
	var refs []sdk.Reference
	for name, lie := range lies {
		refs = append(refs, sdk.Reference{Name: name, Doc: "an honest FCFS run, then: " + name,
			Run: func(w *sim.Workload, cfg sim.Config) (*sim.Result, error) {
				load := w.Load()
				if name == "another-rate" {
					at := *w
					at.ArrivalRate *= slower
					w = &at
				}
				r, err := sim.RunFresh(w, func() (sim.Policy, error) { return fcfs.Policies[0].New(), nil }, cfg)
				if err != nil {
					return nil, err
				}
				r.OfferedLoad = load
				lie(r)
				return r, nil
			}})
	}
	sdk.Serve("absurd", "0.0.1", nil, refs...)
}
