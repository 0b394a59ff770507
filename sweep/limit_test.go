package sweep_test

import (
	"math"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sweep"
)

const limitFile = `name: lim
seed: 1
workload: one-or-all
policies: [fcfs, {name: msfq, threshold: [1, 31]}]
replications: 3
run: {arrivals: 1e4, warmup: 1e3}
`

// plannedLimitFile is limitFile with limit: {hi: 9}, and its plan.
func plannedLimitFile(t *testing.T) (*sweep.File, *sweep.LimitPlan) {
	t.Helper()
	f, err := sweep.Parse([]byte(limitFile+"limit: {hi: 9}\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := sweep.PlanLimit(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	return f, p
}

// TestPlanLimit: defaults from the rate at load 1 and the run length (a
// rel_tol of the growth test's resolution at 10^4 arrivals, 0.0225 ×
// √(10^6/10^4) = 0.225), one target per policy variant (labelled by the
// swept parameter), and probe files that expand into one point per rate
// of the target alone.
func TestPlanLimit(t *testing.T) {
	for _, c := range []struct {
		arrivals int64
		want     float64
	}{{1e6, 0.0225}, {2e5, 0.0504}, {4e6, 0.0113}, {1e4, 0.225}} {
		// 0.0225·√5 = 0.050312 and 0.0225/2 = 0.01125, rounded up to
		// three significant digits.
		if got := sweep.LimitRelTol(c.arrivals); got != c.want {
			t.Errorf("LimitRelTol(%d) = %v, want %v", c.arrivals, got, c.want)
		}
	}
	_, p := plannedLimitFile(t)
	rate1 := 1 / (0.9/32 + 0.1)
	if math.Abs(p.Rate1-rate1) > 1e-12 || math.Abs(p.Lo-0.05*rate1) > 1e-12 || p.Hi != 9 ||
		p.RelTol != 0.225 || p.Probes != sweep.DefaultLimitProbes {
		t.Errorf("plan %+v", p)
	}
	var labels []string
	for _, tg := range p.Targets {
		labels = append(labels, tg.Label)
	}
	if got := strings.Join(labels, "; "); got != `fcfs; msfq threshold=1; msfq threshold=31` {
		t.Errorf("targets %s", got)
	}
}

// TestProbeFile: a round's probe file expands into one point per rate of
// its target alone, leaves the limit file as it was, and is the same
// campaign for the same round.
func TestProbeFile(t *testing.T) {
	f, p := plannedLimitFile(t)
	pf := sweep.ProbeFile(f, p.Targets[2], []float64{3, 4})
	c, err := sweep.Expand(pf, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Points != 2 || len(c.Tasks) != 6 || c.Tasks[0].Policy != "msfq" || c.Tasks[0].Params["threshold"] != 31 ||
		c.Tasks[0].ArrivalRate != 3 || c.Tasks[5].ArrivalRate != 4 {
		t.Errorf("probe campaign: %d points, %d tasks, first %+v", c.Points, len(c.Tasks), c.Tasks[0])
	}
	if f.Limit == nil || f.Axes != nil {
		t.Error("ProbeFile changed the limit file")
	}
	// The same round is the same campaign (reuse by content).
	c2, _ := sweep.Expand(sweep.ProbeFile(f, p.Targets[2], []float64{3, 4}), builtin.Catalog{})
	if c2 == nil || c2.ID != c.ID {
		t.Error("probe campaign ids differ for the same round")
	}
	// A limit file is not one campaign.
	if _, err := sweep.Expand(f, builtin.Catalog{}); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("Expand of a limit file: %v", err)
	}
}

// TestPlanLimitRefused: bad limit blocks are refused with an error naming
// the key.
func TestPlanLimitRefused(t *testing.T) {
	cases := []struct{ extra, want string }{
		{"limit: {lo: 5, hi: 4}\n", "limit.lo"},
		{"limit: {lo: -1}\n", "limit.lo"},
		{"limit: {hi: .inf}\n", "limit.hi"},
		{"limit: {rel_tol: -0.1}\n", "limit.rel_tol"},
		{"limit: {rel_tol: 5}\n", "limit.rel_tol: must be a fraction in (0, 1)"},
		{"limit: {probes: 1000}\n", "limit.probes"},
		{"limit: {hi: 9}\naxes: {arrival_rate: [1, 2]}\n", "axes.arrival_rate"},
		{"limit: {hi: 9}\naxes: {load: [0.5]}\n", "axes.load"},
		{"limit: {hi: 9}\naxes: {servers: [16, 32]}\n", "axes.servers"},
		{"limit: {hi: 9}\nprecision: {metric: mean_response, rel_half_width: 0.1, max_replications: 10}\n", "precision"},
		{"limit: {hi: 9, step: 2}\n", "step"},
		{"limit: {hi: 9}\nrun: {arrivals: 0}\n", "arrivals"},
		{"limit: {hi: 9}\nrun: {arrivals: 1e4, max_in_system: 5}\n", "run.max_in_system"},
		{"limit: {hi: 9}\nzip: [[servers, load]]\n", "zip is not supported"},
		{"limit: {hi: 9}\nname: \"\"\n", "name: required"},
		{"limit: {hi: 9}\nreplications: 0\n", "replications: must be >= 1"},
	}
	for _, c := range cases {
		src := limitFile + c.extra
		// A key the case sets is taken out of limitFile.
		for _, line := range []string{"run: {arrivals: 1e4, warmup: 1e3}\n", "name: lim\n", "replications: 3\n"} {
			if strings.Contains("\n"+c.extra, "\n"+line[:strings.Index(line, ":")+1]) {
				src = strings.Replace(src, line, "", 1)
			}
		}
		f, err := sweep.Parse([]byte(src), "yaml")
		if err == nil {
			_, err = sweep.PlanLimit(f, builtin.Catalog{})
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming %s", c.extra, err, c.want)
		}
	}
	// A policy parameter out of range is reported before anything runs.
	f, err := sweep.Parse([]byte(strings.Replace(limitFile, "[1, 31]", "[1, 99]", 1)+"limit: {hi: 9}\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sweep.PlanLimit(f, builtin.Catalog{}); err == nil || !strings.Contains(err.Error(), "threshold") {
		t.Errorf("threshold 99 on k = 32: %v", err)
	}
}

// "limit: {}" is a search with every default: the decoder dropped the
// empty block, and the file read as a sweep without axes.
func TestEmptyLimitBlock(t *testing.T) {
	f, err := sweep.Parse([]byte("name: x\nworkload: one-or-all\npolicies: [fcfs]\nreplications: 2\nrun: {arrivals: 2000}\nlimit: {}\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Limit == nil {
		t.Fatal("limit: {} read as no limit block")
	}
	if _, err := sweep.PlanLimit(f, builtin.Catalog{}); err != nil {
		t.Fatalf("limit: {}: %v", err)
	}
}
