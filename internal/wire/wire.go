// Package wire is the plugin process contract: the run request a worker
// sends a policy plugin and how it is checked and turned into an engine run,
// the go-plugin handshake, and the plugin-side gRPC server. sdk.Serve (the
// plugin side) and worker/pluginhost (the host side) both use it, so the two
// sides cannot disagree; policy authors never see it.
//
// The run block of a sweep file is RunConfig too (package sweep embeds it),
// so the run length a user writes, the one a task carries and the one a
// plugin receives are one type, validated in one place and converted to
// sim.Config in one place (RunConfig.Config).
package wire

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
	// Run is the seed, run length and instrumentation.
	Run Run `json:"run"`
}

// Run is a request's run block: the replication's seed beside its
// RunConfig, in one JSON object ({"seed": …, "arrivals": …, …}).
type Run struct {
	Seed uint64 `json:"seed"`
	RunConfig
}

// Config is the engine configuration of the run block.
func (r Run) Config() sim.Config { return r.RunConfig.Config(r.Seed) }

// RunConfig is the serialisable part of sim.Config except the seed (see
// sim.Config for each field's meaning): the run length and the engine's
// limits and instrumentation. A sweep's run block embeds it (the seed there
// is derived per replication), and a plugin request carries it with the
// seed (Run). Progress, Context and Observer are wired by whoever runs it.
//
// The JSON names and order are those of the sweep file's run block: task
// and campaign ids hash this encoding, so renaming or reordering a field, or
// dropping omitempty from one that used to be absent, changes every id.
type RunConfig struct {
	Arrivals       int64   `mapstructure:"arrivals" json:"arrivals"`
	Warmup         int64   `mapstructure:"warmup" json:"warmup"`
	MSER           bool    `mapstructure:"mser" json:"mser,omitempty"`
	MaxInSystem    int     `mapstructure:"max_in_system" json:"max_in_system,omitempty"`
	DrainLimit     int64   `mapstructure:"drain_limit" json:"drain_limit,omitempty"`
	SeriesInterval float64 `mapstructure:"series_interval" json:"series_interval,omitempty"`
	SeriesMax      int     `mapstructure:"series_max" json:"series_max,omitempty"`
}

// Config is the engine configuration for a replication with this seed
// (without Progress, Context or Observer). It is the one conversion from the
// serialised run block to sim.Config.
func (c RunConfig) Config(seed uint64) sim.Config {
	return sim.Config{
		Seed: seed, Warmup: c.Warmup, Arrivals: c.Arrivals, MSER: c.MSER,
		MaxInSystem: c.MaxInSystem, DrainLimit: c.DrainLimit,
		SeriesInterval: c.SeriesInterval, SeriesMax: c.SeriesMax,
	}
}

// Validate checks the run block as the engine will (sim.Config.Validate),
// so that a bad sweep or request is rejected before dispatch rather than
// reported as failed runs. The engine reads a series_max <= 0 as its
// default; a negative one is rejected here as a mistake.
func (c RunConfig) Validate() error {
	cfg := c.Config(0)
	if err := cfg.Validate(); err != nil {
		return err
	}
	if c.SeriesMax < 0 {
		return fmt.Errorf("run.series_max: must be >= 0, got %d", c.SeriesMax)
	}
	return nil
}

// BuildWorkload builds and validates the engine workload of the request
// (workload.Spec.BuildArrivals) and checks that a replayed trace holds the
// run's warmup+arrivals jobs.
func (r *RunRequest) BuildWorkload() (*sim.Workload, error) {
	w, err := r.Workload.BuildArrivals(r.ArrivalRate, r.Interarrival, r.Trace)
	if err != nil {
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
