package workload

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/swf"
	"github.com/msjfarm/msjfarm/sim"
)

// TestNamedLoads checks each named workload builds and its load per unit
// rate against a value derived by hand from its source.
func TestNamedLoads(t *testing.T) {
	cases := map[string]float64{
		// one-or-all: (0.9·1·1 + 0.1·32·1)/32 = 4.1/32 = 0.128125.
		"one-or-all": 4.1 / 32,
		// four-class: (0.5·1 + 0.25·3 + 0.2·5 + 0.05·15)/15 = 3/15 = 0.2.
		"four-class": 0.2,
		// killsmart: (0.95·1·1.25 + 0.05·2048·10)/2048 = (1.1875 + 1024)/2048.
		"killsmart-one-or-all": (0.95*1.25 + 0.05*2048*10) / 2048,
		// powers of two: 0.25·(1+2+4+8)·1/8 = 15/32.
		"powers-of-two":    15.0 / 32,
		"powers-of-two-h2": 15.0 / 32,
	}
	for _, n := range Names() {
		s, err := Named(n)
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.Build(1)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if want, ok := cases[n]; ok {
			if got := w.Load(); math.Abs(got-want) > 1e-12 {
				t.Errorf("%s: load per unit rate %v, want %v", n, got, want)
			}
		}
	}
	// Borg shares are rounded in the table; they sum to about 1.
	for _, n := range []string{"borg-b", "borg-e"} {
		s, _ := Named(n)
		var sum float64
		for _, c := range s.Classes {
			sum += c.Share
		}
		if len(s.Classes) != 26 || math.Abs(sum-1) > 0.02 {
			t.Errorf("%s: %d classes, shares sum to %v", n, len(s.Classes), sum)
		}
	}
	if _, err := Named("nope"); err == nil || !strings.Contains(err.Error(), "one-or-all") {
		t.Errorf("unknown workload error should list known names: %v", err)
	}
}

func TestFromTrace(t *testing.T) {
	const in = `; MaxProcs: 8
1 0 -1 10 2 -1 -1 2 -1 -1 1 1 1 1 1 -1 -1 -1
2 5 -1 20 4 -1 -1 4 -1 -1 1 1 1 1 1 -1 -1 -1
3 6 -1 30 2 -1 -1 2 -1 -1 1 1 1 1 1 -1 -1 -1
`
	tr, err := swf.Read(strings.NewReader(in), 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := FromTrace("t", tr, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	// Two classes (needs 2 and 4); arrivals halved: 0, 2.5, 3.
	if len(w.Classes) != 2 || w.Classes[0].Need != 2 || w.Classes[1].Need != 4 {
		t.Fatalf("classes %+v", w.Classes)
	}
	if w.Trace[1].Arrival != 2.5 || w.Trace[2].Class != 0 || w.Trace[2].Size != 30 {
		t.Fatalf("trace %+v", w.Trace)
	}
	// The need-2 class's service distribution has mean (10+30)/2 = 20.
	if m := w.Classes[0].Service.Mean(); m != 20 {
		t.Fatalf("class mean %v", m)
	}
	if _, err := FromTrace("t", tr, 0); err == nil || !strings.Contains(err.Error(), "time_scale") {
		t.Fatalf("want time_scale error, got %v", err)
	}
}

// BuildArrivals is the one builder: Poisson by default, a renewal process
// with an interarrival spec, a replay with a trace; errors name the field.
func TestBuildArrivals(t *testing.T) {
	s, _ := Named("one-or-all")
	w, err := s.BuildArrivals(5, nil, nil)
	if err != nil || w.Interarrival != nil || w.Trace != nil || w.ArrivalRate != 5 || len(w.Classes) != 2 || w.Servers != 32 {
		t.Fatalf("poisson: %+v, %v", w, err)
	}
	mean, scv := 1.0, 4.0
	ia := &dist.Spec{Dist: "hyperexp", Mean: &mean, SCV: &scv}
	if w, err := s.BuildArrivals(5, ia, nil); err != nil || w.Interarrival == nil || math.Abs(w.Interarrival.SCV()-4) > 1e-12 {
		t.Fatalf("renewal: %+v, %v", w, err)
	}
	tr := []sim.TraceJob{{Arrival: 0, Size: 1, Class: 0}, {Arrival: 1, Size: 2, Class: 1}}
	if w, err := s.BuildArrivals(0, nil, tr); err != nil || len(w.Trace) != 2 {
		t.Fatalf("trace: %v", err)
	}
	for _, c := range []struct {
		rate float64
		ia   *dist.Spec
		tr   []sim.TraceJob
		want string
	}{
		{5, ia, tr, "takes no interarrival"},
		{5, &dist.Spec{Dist: "exp"}, nil, `workload "one-or-all": interarrival`},
		{0, nil, nil, "arrival rate must be finite and > 0"},
	} {
		if _, err := s.BuildArrivals(c.rate, c.ia, c.tr); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// TestFromTraceAllocatesPerJob bounds what converting a trace allocates
// per job: the 40 bytes a replay keeps (32 in its sim.TraceJob, 8 in its
// class's service distribution) and the 8 of one buffer of run times. The
// run times were gathered into a map of slices grown by appending: 76
// to 83 bytes a job, on every replication of a trace a worker ran.
func TestFromTraceAllocatesPerJob(t *testing.T) {
	const n = 100_000
	var b strings.Builder
	b.WriteString("; MaxProcs: 64\n")
	for i := range n {
		fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 -1 %d\n", i+1, i*3, 1+i%97, []int{1, 2, 4, 8, 16, 32, 64, 3, 5, 12}[i%10], 200)
	}
	tr, err := swf.Read(strings.NewReader(b.String()), 0)
	if err != nil || len(tr.Jobs) != n {
		t.Fatalf("%d jobs, %v", len(tr.Jobs), err)
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	w, err := FromTrace("t", tr, 1)
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatal(err)
	}
	perJob := float64(m1.TotalAlloc-m0.TotalAlloc) / n
	t.Logf("%.1f bytes allocated per job", perJob)
	if perJob > 56 {
		t.Fatalf("converting a trace allocated %.1f bytes per job; at most 56 (40 kept, 8 of run times gathered once)", perJob)
	}
	runtime.KeepAlive(w)
}

// TestFromJobsIsFromTrace: the workload built from a trace's counts and
// its kept jobs streamed (swf.Shape.At, swf.EachKept) is FromTrace's of
// the trace Read gives, bit for bit — classes, shares, service
// distributions, and every replayed job's arrival, size, class and
// requested time — whether the file's jobs are in submit order or not,
// for every k and time scale; and its refusals are FromTrace's.
func TestFromJobsIsFromTrace(t *testing.T) {
	var sorted, unsorted strings.Builder
	sorted.WriteString("; MaxProcs: 64\n")
	unsorted.WriteString("; MaxProcs: 64\n")
	widths := []int{1, 2, 4, 8, 16, 32, 64, 3, 5, 12, 100, -1, 0}
	for i := range 5000 {
		w := widths[i%len(widths)]
		fmt.Fprintf(&sorted, "%d %d -1 %d %d -1 -1 %d %d\n", i+1, 100+i*3, (i*7919)%997-1, w, 1+i%9, 10+i%13)
		// Submit times out of order, with ties, some of them across
		// the file (i%50 repeats), and a fractional one.
		fmt.Fprintf(&unsorted, "%d %v -1 %d %d -1 -1 %d %d\n", i+1, float64((i*7907)%5003)+float64(i%50)/4, 1+(i*31)%1000, w, 1+i%9, (i*3)%400-1)
	}
	for name, in := range map[string]string{"sorted": sorted.String(), "unsorted": unsorted.String()} {
		data := []byte(in)
		sh, err := swf.ShapeOf(bytes.NewReader(data), swf.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{0, 1, 4, 12, 64, 128} {
			for _, ts := range []float64{1, 0.37, 3} {
				tr, err := swf.Read(bytes.NewReader(data), k)
				if err != nil {
					t.Fatal(err)
				}
				want, werr := FromTrace("t", tr, ts)
				c, err := sh.At(k)
				if err != nil {
					t.Fatal(err)
				}
				got, gerr := FromJobs("t", c, func(yield func(swf.Job) error) error {
					return swf.EachKept(bytes.NewReader(data), c.K, swf.Limits{}, yield)
				}, ts)
				if werr != nil || gerr != nil {
					t.Fatalf("%s, k=%d, scale %v: FromTrace %v, FromJobs %v", name, k, ts, werr, gerr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s, k=%d, scale %v: FromJobs differs from FromTrace", name, k, ts)
				}
				for i := range want.Trace {
					g, w := got.Trace[i], want.Trace[i]
					if math.Float64bits(g.Arrival) != math.Float64bits(w.Arrival) || math.Float64bits(g.Size) != math.Float64bits(w.Size) ||
						math.Float64bits(g.Requested) != math.Float64bits(w.Requested) || g.Class != w.Class {
						t.Fatalf("%s, k=%d, scale %v: job %d is %+v, FromTrace's %+v", name, k, ts, i, g, w)
					}
				}
				if name == "unsorted" && k == 64 && slices.IsSortedFunc(tr.Jobs, func(a, b swf.Job) int { return int(a.Number - b.Number) }) {
					t.Fatal("the unsorted trace reads in file order: it tests nothing")
				}
			}
		}
	}

	// Refusals: FromTrace's words for the same trace.
	none := "; MaxProcs: 4\n1 0 -1 10 8\n2 5 -1 -1 1\n"
	tr, err := swf.Read(strings.NewReader(none), 0)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := swf.ShapeOf(strings.NewReader(none), swf.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := sh.At(0)
	each := func(yield func(swf.Job) error) error {
		return swf.EachKept(strings.NewReader(none), c.K, swf.Limits{}, yield)
	}
	for _, ts := range []float64{1, 0, math.Inf(1)} {
		_, werr := FromTrace("t", tr, ts)
		_, gerr := FromJobs("t", c, each, ts)
		if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
			t.Errorf("scale %v: FromTrace %v, FromJobs %v", ts, werr, gerr)
		}
	}
	// Counts that do not match the jobs are an error, not a short or
	// overrun workload.
	in := "; MaxProcs: 4\n1 0 -1 10 1\n2 5 -1 20 2\n"
	sh, _ = swf.ShapeOf(strings.NewReader(in), swf.Limits{})
	c, _ = sh.At(0)
	each = func(yield func(swf.Job) error) error {
		return swf.EachKept(strings.NewReader(in), c.K, swf.Limits{}, yield)
	}
	for _, kept := range []int{1, 3} {
		wrong := c
		wrong.Kept = kept
		if _, err := FromJobs("t", wrong, each, 1); err == nil {
			t.Errorf("%d jobs counted, 2 given: accepted", kept)
		}
	}
}

// TestFromJobsAllocatesPerJob: converting a streamed trace allocates the
// 40 bytes a job a replay keeps and the 8 of its run times gathered once:
// nothing of the parsed trace (Read's jobs, 40 to 80 bytes a job more).
func TestFromJobsAllocatesPerJob(t *testing.T) {
	const n = 100_000
	var b strings.Builder
	b.WriteString("; MaxProcs: 64\n")
	for i := range n {
		fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 -1 %d\n", i+1, i*3, 1+i%97, []int{1, 2, 4, 8, 16, 32, 64, 3, 5, 12}[i%10], 200)
	}
	data := []byte(b.String())
	sh, err := swf.ShapeOf(bytes.NewReader(data), swf.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := sh.At(0)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	w, err := FromJobs("t", c, func(yield func(swf.Job) error) error {
		return swf.EachKept(bytes.NewReader(data), c.K, swf.Limits{}, yield)
	}, 1)
	runtime.ReadMemStats(&m1)
	if err != nil || len(w.Trace) != n {
		t.Fatal(err)
	}
	perJob := float64(m1.TotalAlloc-m0.TotalAlloc) / n
	t.Logf("%.1f bytes allocated per job", perJob)
	if perJob > 52 {
		t.Fatalf("converting a streamed trace allocated %.1f bytes per job; at most 52 (40 kept, 8 of run times gathered once)", perJob)
	}
}
