// Package workload holds the named workloads of the papers, in spec form (so
// a normalised sweep file can write them out in full), and builds engine
// workloads from specs.
package workload

import (
	"fmt"
	"sort"
	"strings"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
)

// ClassSpec is one job class in sweep-file form.
type ClassSpec struct {
	Name    string    `mapstructure:"name" json:"name,omitempty" yaml:"name,omitempty" toml:"name,omitempty"`
	Need    int       `mapstructure:"need" json:"need" yaml:"need" toml:"need"`
	Share   float64   `mapstructure:"share" json:"share" yaml:"share" toml:"share"`
	Service dist.Spec `mapstructure:"service" json:"service" yaml:"service" toml:"service"`
}

// Spec is a system (k servers) with its job classes.
type Spec struct {
	Name    string      `json:"name"`
	Source  string      `json:"source,omitempty"`
	Servers int         `json:"servers"`
	Classes []ClassSpec `json:"classes"`
}

// Build turns the spec into an engine workload with Poisson arrivals at rate.
// Errors name the class and field.
func (s Spec) Build(rate float64) (*sim.Workload, error) { return s.BuildArrivals(rate, nil, nil) }

// BuildArrivals turns the spec into an engine workload and validates it: the
// one place a workload spec becomes a sim.Workload, for sweep tasks, plugin
// requests and the command line alike, so the three cannot drift apart.
//
// The arrival process is, in order of precedence: trace, replayed as given
// (its Class fields index s.Classes; the engine then ignores rate, and an
// interarrival distribution is an error, since a replay has its own arrival
// instants); or a renewal process
// of rate with inter-arrival times drawn from interarrival rescaled to mean
// 1/rate (see sim.Workload); or, when interarrival is nil, Poisson at rate.
// Errors name the workload, the class and the field.
func (s Spec) BuildArrivals(rate float64, interarrival *dist.Spec, trace []sim.TraceJob) (*sim.Workload, error) {
	w := &sim.Workload{Name: s.Name, Servers: s.Servers, ArrivalRate: rate}
	for i, c := range s.Classes {
		d, err := c.Service.Build()
		if err != nil {
			return nil, fmt.Errorf("workload %q: class %d: service: %w", s.Name, i, err)
		}
		w.Classes = append(w.Classes, sim.Class{Name: c.Name, Need: c.Need, Share: c.Share, Service: d})
	}
	switch {
	case len(trace) > 0:
		if interarrival != nil {
			return nil, fmt.Errorf("workload %q: a replayed trace takes no interarrival distribution", s.Name)
		}
		w.Trace = trace
	case interarrival != nil:
		d, err := interarrival.Build()
		if err != nil {
			return nil, fmt.Errorf("workload %q: interarrival: %w", s.Name, err)
		}
		w.Interarrival = d
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}

func f(v float64) *float64 { return &v }

// Exp is the spec of an exponential distribution with the given mean.
func Exp(mean float64) dist.Spec { return dist.Spec{Dist: "exp", Mean: f(mean)} }

// named is the catalogue. Each entry documents its source.
var named = map[string]func() Spec{
	// Q §6.2: one-or-all, k = 32, p1 = 0.9, p32 = 0.1, exponential mean 1
	// for both classes; stable iff λ < 1/(0.9/32 + 0.1) ≈ 7.805.
	"one-or-all": func() Spec {
		return Spec{Name: "one-or-all", Source: "Quickswap §6.2", Servers: 32, Classes: []ClassSpec{
			{Name: "light", Need: 1, Share: 0.9, Service: Exp(1)},
			{Name: "heavy", Need: 32, Share: 0.1, Service: Exp(1)},
		}}
	},
	// Q §6.3: k = 15, needs 1, 3, 5, 15 with p = 0.5, 0.25, 0.2, 0.05,
	// exponential mean 1; stabilisable iff λ < 5 (Q Remark 1).
	"four-class": func() Spec {
		return Spec{Name: "four-class", Source: "Quickswap §6.3", Servers: 15, Classes: []ClassSpec{
			{Name: "class-1", Need: 1, Share: 0.5, Service: Exp(1)},
			{Name: "class-3", Need: 3, Share: 0.25, Service: Exp(1)},
			{Name: "class-5", Need: 5, Share: 0.2, Service: Exp(1)},
			{Name: "class-15", Need: 15, Share: 0.05, Service: Exp(1)},
		}}
	},
	// K §4.5–4.6: Kill-Smart's one-or-all, N = 2048, p_s = 0.95, small jobs
	// (1 server) exponential mean 1.25, big jobs (all servers) mean 10.
	"killsmart-one-or-all": killsmartOneOrAll,
	// S Fig. 2: k = 8, need uniform on {1, 2, 4, 8}, exponential sizes of
	// mean 1 independent of the need.
	"powers-of-two": func() Spec { return powersOfTwo("powers-of-two", Exp(1)) },
	// S Fig. 2–4 (second variant): as powers-of-two with hyperexponential
	// durations, C² = 10.
	"powers-of-two-h2": func() Spec {
		return powersOfTwo("powers-of-two-h2", dist.Spec{Dist: "hyperexp", Mean: f(1), SCV: f(10)})
	},
	// K Table 1 (Google Borg, cell B): 26 classes, exponential holding
	// times with the table's means; k = 2048 (Q §6.4: stable for λ < 4.94).
	"borg-b": func() Spec { return borg("borg-b", borgB) },
	// K Table 1 (Google Borg, cell E): 26 classes. k follows Q §6.4's rule
	// ("k based on the server need of the heaviest class": the power of two
	// at or above it), so k = 1024 for cell E's largest need of 1000. (At
	// k = 2048 no need exceeds k/2, and Kill-Smart could never kill, while
	// K §5.1 reports kills on cell E.)
	"borg-e": borgCellE,
	// B §1.1, Fig. 1–2: the Halfin–Whitt "several small and few large"
	// family (see HalfinWhitt), here at k = 256 (f_k = 4: needs 4, 8, 16,
	// 32). A sweep's servers override or axis recomputes the classes for its
	// k through NamedFor.
	"halfin-whitt": func() Spec { return mustHalfinWhitt(256) },
	// B §6.2, Table 2: SDSC SP2 class model, 7 classes, k = 512 (Fig. 3
	// also runs k = 1024); service fitted to mean and std (see Matched).
	"sdsc-sp2": func() Spec { return hpcModel("sdsc-sp2", "Balanced Splitting Table 2", sdscSP2) },
	// B §6.2, Table 3: KIT FH2 class model, as sdsc-sp2.
	"kit-fh2": func() Spec { return hpcModel("kit-fh2", "Balanced Splitting Table 3", kitFH2) },
	// K Fig. 4i: killsmart-one-or-all with bounded-Pareto service of the
	// same means, α = 2.1 (see BoundedPareto).
	"killsmart-one-or-all-bpareto": func() Spec {
		return withBoundedPareto(killsmartOneOrAll(), "killsmart-one-or-all-bpareto", 2.1)
	},
	// K Fig. 5f, 6f: Borg cells B and E with bounded-Pareto service of the
	// table's means, α = 2 (see BoundedPareto).
	"borg-b-bpareto": func() Spec { return withBoundedPareto(borg("borg-b", borgB), "borg-b-bpareto", 2) },
	"borg-e-bpareto": func() Spec { return withBoundedPareto(borgCellE(), "borg-e-bpareto", 2) },
}

func killsmartOneOrAll() Spec {
	return Spec{Name: "killsmart-one-or-all", Source: "Kill-Smart §4.5", Servers: 2048, Classes: []ClassSpec{
		{Name: "small", Need: 1, Share: 0.95, Service: Exp(1.25)},
		{Name: "big", Need: 2048, Share: 0.05, Service: Exp(10)},
	}}
}

func borgCellE() Spec { s := borg("borg-e", borgE); s.Servers = 1024; return s }

func powersOfTwo(name string, svc dist.Spec) Spec {
	s := Spec{Name: name, Source: "ServerFilling-SRPT Fig. 2", Servers: 8}
	for _, n := range []int{1, 2, 4, 8} {
		s.Classes = append(s.Classes, ClassSpec{Name: fmt.Sprintf("need-%d", n), Need: n, Share: 0.25, Service: svc})
	}
	return s
}

// borgB and borgE are K Table 1: (cores, probability, mean holding time [s]).
var borgB = [][3]float64{
	{1, 8.4e-1, 6.7e+0}, {2, 5.0e-2, 2.2e-1}, {3, 6.5e-3, 5.2e+0}, {4, 2.4e-2, 3.2e+0},
	{5, 8.8e-4, 1.0e+2}, {6, 1.5e-3, 1.2e+2}, {9, 8.6e-5, 5.9e+0}, {10, 5.7e-3, 1.4e+1},
	{11, 3.4e-5, 3.9e+3}, {14, 4.0e-5, 2.3e+2}, {15, 3.9e-4, 1.3e+1}, {16, 7.8e-5, 1.4e+4},
	{20, 6.9e-4, 1.0e+2}, {30, 2.4e-4, 7.4e-1}, {35, 2.2e-4, 2.1e-1}, {38, 5.8e-5, 7.3e+1},
	{50, 7.2e-4, 5.3e+1}, {98, 8.8e-5, 8.1e-1}, {99, 7.6e-4, 5.2e+0}, {100, 6.9e-2, 3.1e+0},
	{120, 3.6e-5, 2.8e-1}, {200, 8.0e-5, 5.2e+3}, {256, 1.4e-4, 3.6e+3}, {500, 2.1e-4, 5.2e+1},
	{795, 3.8e-5, 3.3e+0}, {2000, 1.3e-4, 5.7e+2},
}

var borgE = [][3]float64{
	{1, 9.3e-1, 3.8e+0}, {2, 6.3e-2, 3.5e+0}, {3, 8.2e-3, 2.0e+1}, {4, 3.2e-4, 5.4e+1},
	{5, 5.6e-4, 4.9e+1}, {6, 1.2e-4, 1.4e+1}, {7, 1.2e-3, 1.6e+0}, {10, 3.2e-4, 3.1e+1},
	{11, 1.4e-4, 4.5e+1}, {12, 6.7e-5, 1.1e+1}, {15, 2.2e-4, 2.8e+2}, {20, 6.3e-4, 8.5e+1},
	{25, 4.9e-4, 1.1e+2}, {30, 3.4e-5, 2.2e+0}, {40, 1.2e-4, 9.9e+3}, {43, 8.9e-5, 3.1e+0},
	{48, 3.5e-4, 2.6e+0}, {50, 1.0e-4, 1.4e+1}, {100, 1.6e-4, 3.8e+2}, {180, 3.4e-5, 1.8e+4},
	{200, 3.7e-5, 1.6e+1}, {400, 3.1e-4, 5.2e+1}, {457, 5.2e-5, 7.5e-1}, {500, 5.0e-4, 1.1e+1},
	{929, 3.9e-5, 1.7e+1}, {1000, 4.2e-5, 2.0e+2},
}

func borg(name string, rows [][3]float64) Spec {
	s := Spec{Name: name, Source: "Kill-Smart Table 1", Servers: 2048}
	for _, r := range rows {
		s.Classes = append(s.Classes, ClassSpec{
			Name: fmt.Sprintf("cores-%d", int(r[0])), Need: int(r[0]), Share: r[1], Service: Exp(r[2]),
		})
	}
	return s
}

// Named returns the named workload, or an error listing the known names.
func Named(name string) (Spec, error) {
	mk, ok := named[strings.ToLower(name)]
	if !ok {
		return Spec{}, fmt.Errorf("unknown workload %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return mk(), nil
}

// Names lists the named workloads, sorted.
func Names() []string {
	n := make([]string, 0, len(named))
	for k := range named {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}
