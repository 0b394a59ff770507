package sdk

import (
	"fmt"
	"strings"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/sim"
)

// RunRequest is one replication as the host asks a plugin to run it. It is
// carried as JSON (proto RunRequest.request_json); everything that can
// change the result is in it, and nothing else is, so the same request
// always yields the same result bytes.
type RunRequest struct {
	// Policy is the name of one of the plugin's policies.
	Policy string `json:"policy"`
	// Params are the policy's parameters; validated against its schema
	// (sim.Resolve) by the host before dispatch and by the plugin again.
	Params map[string]any `json:"params,omitempty"`
	// Workload is the system: k servers and the job classes (need, share,
	// service distribution as a dist.Spec).
	Workload workload.Spec `json:"workload"`
	// ArrivalRate is the total arrival rate λ (ignored for a trace).
	ArrivalRate float64 `json:"arrival_rate,omitempty"`
	// Interarrival, if set, makes arrivals a renewal process with this
	// inter-arrival distribution rescaled to mean 1/ArrivalRate (see
	// sim.Workload); nil means Poisson.
	Interarrival *dist.Spec `json:"interarrival,omitempty"`
	// Trace, if non-empty, is replayed instead of generated arrivals; its
	// Class fields index Workload.Classes.
	Trace []sim.TraceJob `json:"trace,omitempty"`
	// Run is the run length and instrumentation.
	Run RunConfig `json:"run"`
}

// RunConfig is the serialisable part of sim.Config (see there for each
// field's meaning); Progress and Observer are wired by the plugin itself.
type RunConfig struct {
	Seed           uint64  `json:"seed"`
	Warmup         int64   `json:"warmup"`
	Arrivals       int64   `json:"arrivals"`
	MSER           bool    `json:"mser,omitempty"`
	MaxInSystem    int     `json:"max_in_system,omitempty"`
	DrainLimit     int64   `json:"drain_limit,omitempty"`
	SeriesInterval float64 `json:"series_interval,omitempty"`
	SeriesMax      int     `json:"series_max,omitempty"`
}

// Config returns the engine configuration (without Progress or Observer).
func (c RunConfig) Config() sim.Config {
	return sim.Config{
		Seed: c.Seed, Warmup: c.Warmup, Arrivals: c.Arrivals, MSER: c.MSER,
		MaxInSystem: c.MaxInSystem, DrainLimit: c.DrainLimit,
		SeriesInterval: c.SeriesInterval, SeriesMax: c.SeriesMax,
	}
}

// Validate checks the run length as the engine will (sim.Run), so that a
// bad request is rejected before dispatch rather than reported as a failed
// run.
func (c RunConfig) Validate() error {
	cfg := c.Config()
	if err := cfg.Validate(); err != nil {
		return err
	}
	if c.SeriesMax < 0 {
		return fmt.Errorf("run: series_max must be >= 0, got %d", c.SeriesMax)
	}
	return nil
}

// BuildWorkload builds and validates the engine workload of the request.
func (r *RunRequest) BuildWorkload() (*sim.Workload, error) {
	spec := r.Workload
	w := &sim.Workload{Name: spec.Name, Servers: spec.Servers, ArrivalRate: r.ArrivalRate}
	for i, c := range spec.Classes {
		d, err := c.Service.Build()
		if err != nil {
			return nil, fmt.Errorf("workload %q: class %d: service: %w", spec.Name, i, err)
		}
		w.Classes = append(w.Classes, sim.Class{Name: c.Name, Need: c.Need, Share: c.Share, Service: d})
	}
	if len(r.Trace) > 0 {
		if r.Interarrival != nil {
			return nil, fmt.Errorf("workload %q: a replayed trace takes no interarrival distribution", spec.Name)
		}
		w.Trace = r.Trace
	} else if r.Interarrival != nil {
		d, err := r.Interarrival.Build()
		if err != nil {
			return nil, fmt.Errorf("workload %q: interarrival: %w", spec.Name, err)
		}
		w.Interarrival = d
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if n := int64(len(r.Trace)); n > 0 && n < r.Run.Warmup+r.Run.Arrivals {
		return nil, fmt.Errorf("run: warmup+arrivals = %d exceeds the trace's %d jobs", r.Run.Warmup+r.Run.Arrivals, n)
	}
	return w, nil
}

// Validate checks everything about the request that does not need the
// policy: the workload builds and the run length is valid.
func (r *RunRequest) Validate() error {
	if strings.TrimSpace(r.Policy) == "" {
		return fmt.Errorf("request names no policy")
	}
	if err := r.Run.Validate(); err != nil {
		return err
	}
	_, err := r.BuildWorkload()
	return err
}

// CheckParams resolves params against spec's schema (sim.Resolve): unknown
// names, wrong types and out-of-range values are errors naming the
// parameter. A reference model takes none.
func CheckParams(spec Spec, params map[string]any) error {
	if spec.Reference != nil {
		if len(params) > 0 {
			return fmt.Errorf("policy %s: a reference model takes no parameters", spec.Name)
		}
		return nil
	}
	if _, err := sim.Resolve(spec.Params(), params); err != nil {
		return fmt.Errorf("policy %s: %w", spec.Name, err)
	}
	return nil
}
