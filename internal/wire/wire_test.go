package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/sim"
)

func TestRunRequestWorkload(t *testing.T) {
	spec, _ := workload.Named("one-or-all")
	mean, scv := 1.0, 4.0
	renewal := wire.RunRequest{Policy: "fcfs", Workload: spec, ArrivalRate: 5,
		Interarrival: &dist.Spec{Dist: "hyperexp", Mean: &mean, SCV: &scv}, Run: wire.Run{RunConfig: wire.RunConfig{Arrivals: 10}}}
	w, err := renewal.BuildWorkload()
	if err != nil || w.Interarrival == nil || w.ArrivalRate != 5 || w.Servers != 32 || len(w.Classes) != 2 {
		t.Fatalf("renewal: %+v, %v", w, err)
	}
	trace := wire.RunRequest{Policy: "fcfs", Workload: spec, Run: wire.Run{RunConfig: wire.RunConfig{Arrivals: 2}},
		Trace: []sim.TraceJob{{Arrival: 0, Size: 1, Class: 0}, {Arrival: 1, Size: 2, Class: 1}}}
	if w, err := trace.BuildWorkload(); err != nil || len(w.Trace) != 2 {
		t.Fatalf("trace: %v", err)
	}
	// The JSON round trip is exact (the request is what the farm hashes).
	b, _ := json.Marshal(trace)
	var back wire.RunRequest
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if b2, _ := json.Marshal(back); string(b2) != string(b) {
		t.Errorf("round trip changed the request:\n%s\n%s", b, b2)
	}
	for _, c := range []struct {
		mut  func(r *wire.RunRequest)
		want string
	}{
		{func(r *wire.RunRequest) { r.Run.Arrivals = 3 }, "exceeds the trace's 2 jobs"},
		{func(r *wire.RunRequest) { r.Interarrival = renewal.Interarrival }, "takes no interarrival"},
		{func(r *wire.RunRequest) { r.Trace[1].Class = 5 }, "class 5 out of range"},
		{func(r *wire.RunRequest) { r.Workload.Classes[0].Service = dist.Spec{Dist: "exp"} }, "class 0: service"},
		{func(r *wire.RunRequest) { r.Run.Warmup = -1 }, "warmup: must be >= 0"},
		{func(r *wire.RunRequest) { r.Policy = " " }, "names no policy"},
	} {
		r := trace
		r.Trace = append([]sim.TraceJob(nil), trace.Trace...)
		r.Workload.Classes = append([]workload.ClassSpec(nil), spec.Classes...)
		c.mut(&r)
		if err := r.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// TestRunJSON pins the run block's JSON names on the wire: a plugin built
// against this protocol version decodes them with unknown fields rejected,
// so a renamed field would fail every request. Zero optional fields are
// absent, as before they were shared with the sweep file's run block.
func TestRunJSON(t *testing.T) {
	r := wire.Run{Seed: 7, RunConfig: wire.RunConfig{Arrivals: 100, Warmup: 10}}
	b, _ := json.Marshal(r)
	if want := `{"seed":7,"arrivals":100,"warmup":10}`; string(b) != want {
		t.Errorf("run block %s, want %s", b, want)
	}
	full := `{"seed":7,"arrivals":100,"warmup":10,"mser":true,"max_in_system":5,"drain_limit":6,"series_interval":0.5,"series_max":8}`
	var back wire.Run
	if err := json.Unmarshal([]byte(full), &back); err != nil {
		t.Fatal(err)
	}
	c := back.Config()
	if c.Seed != 7 || c.Arrivals != 100 || c.Warmup != 10 || !c.MSER || c.MaxInSystem != 5 || c.DrainLimit != 6 ||
		c.SeriesInterval != 0.5 || c.SeriesMax != 8 {
		t.Errorf("engine config %+v from %s", c, full)
	}
	if b, _ := json.Marshal(back); string(b) != full {
		t.Errorf("round trip %s, want %s", b, full)
	}
	if err := (wire.RunConfig{Arrivals: 10, SeriesMax: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "series_max") {
		t.Errorf("negative series_max: %v", err)
	}
}
