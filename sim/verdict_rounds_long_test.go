//go:build long

package sim_test

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/sim"
)

var (
	roundsLog   = flag.String("verdict.log", "", "TestVerdictCalibrationRounds: append one line per finished point to this file (tab-separated, see roundsHeader)")
	roundsN     = flag.Int("verdict.rounds", 300, "TestVerdictCalibrationRounds: stable rounds (one point of every scenario each)")
	roundsFirst = flag.Int("verdict.round", 0, "TestVerdictCalibrationRounds: first round (to resume a log: the next round after its last complete one)")
	roundsPower = flag.Int("verdict.power_every", 7, "TestVerdictCalibrationRounds: one overload round (1.01 λ*, every scenario with a known λ*) after every n stable rounds; 0: none")
	roundsSides = flag.String("verdict.sides", "both", "TestVerdictCalibrationRounds: \"both\", or \"overload\" to run only the overload rounds (the same points as in a full run)")
	tallyFile   = flag.String("verdict.tally", "", "TestVerdictCalibrationTally: the log to tally (gzip-compressed if its name ends in .gz)")
)

// roundsHeader names the columns of the calibration log, one line per
// point: side (stable or overload), round, scenario, workload, λ, the
// point's seed index (runPoints' first: replication r has seed
// point·reps + r + 1; overload points are offset by roundsOverloadSeeds),
// the pooled verdict, the rule that decided it with its statistic and
// critical value, the replications flagged, converged, the pooled deficit
// closest to firing and its statistic over its critical value, and the
// point's wall and CPU seconds.
const roundsHeader = "side\tround\tscenario\tworkload\tlambda\tpoint\tverdict\ttest\tstatistic\tcritical\tunstable_reps\treps\tconverged\tdeficit\tdeficit_ratio\twall_s\tcpu_s"

// roundsOverloadSeeds offsets the overload points' seed indices from the
// stable ones'.
const roundsOverloadSeeds = 1_000_000

// TestVerdictCalibrationRounds is the calibration of the combined point
// verdict (sim.Pool) run as a background job whose every prefix is a
// usable result: rounds of one stable point of every scenario of
// verdictScenarios (0.97 λ*, or the scenario's known-stable rate), so that
// each prefix mixes the four workloads (per round: three one-or-all
// points, two four-class, two Kill-Smart one-or-all, four Borg cell B),
// and after every verdict.power_every rounds one round of overloads at
// 1.01 λ* (the eight scenarios with a known λ*). Each point is
// verdict.reps replications of verdict.arrivals (after a tenth of that in
// warm-up), and its line is written to verdict.log as soon as it is
// pooled, so a run stopped at any time leaves every finished point.
// Tally a log with TestVerdictCalibrationTally. It never fails on a
// verdict: the log is the result.
//
//	GOMAXPROCS=1 nohup nice -n 5 go test -tags long ./sim -run VerdictCalibrationRounds \
//	    -timeout 0 -verdict.log /var/tmp/cal31/rounds.tsv > /var/tmp/cal31/rounds.out 2>&1 &
//	go test -tags long ./sim -run VerdictCalibrationTally -v -verdict.tally /var/tmp/cal31/rounds.tsv
//
// With -verdict.sides overload it runs the overload rounds alone (the same
// points as a full run's), to re-check the power after a rule change that
// can only withdraw unstable verdicts (engine 0.7.4's episodic points).
func TestVerdictCalibrationRounds(t *testing.T) {
	if *roundsLog == "" {
		t.Skip("-verdict.log not set")
	}
	if *roundsSides != "both" && *roundsSides != "overload" {
		t.Fatalf("-verdict.sides: want \"both\" or \"overload\", got %q", *roundsSides)
	}
	f, err := os.OpenFile(*roundsLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() == 0 {
		fmt.Fprintln(f, roundsHeader)
	}
	// the engine that pooled the lines below (a resumed log may change it)
	fmt.Fprintf(f, "# engine %s, %s\n", sim.Version, time.Now().UTC().Format(time.RFC3339))
	point := func(side string, round int, sc verdictScenario, lam float64, p int) {
		w0, c0 := time.Now(), cpuSeconds()
		pt := runPoints(t, sc, lam, p, 1, *verdictReps, *verdictArrivals)[0]
		name, ratio := "", 0.0
		if d, ok := pt.v.StrongestDeficit(); ok {
			_, st, cr := d.Decider()
			name, ratio = d.Name, st/cr
		}
		_, err := fmt.Fprintf(f, "%s\t%d\t%s\t%s\t%.6g\t%d\t%s\t%s\t%.4g\t%.4g\t%d\t%d\t%v\t%s\t%.3f\t%.2f\t%.2f\n",
			side, round, sc.name, sc.workload, lam, p, pt.v.Verdict, pt.v.Test, pt.v.Statistic, pt.v.Critical,
			pt.v.Unstable, pt.v.N, pt.cv.Converged, name, ratio, time.Since(w0).Seconds(), cpuSeconds()-c0)
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for round := *roundsFirst; round < *roundsFirst+*roundsN; round++ {
		for _, sc := range verdictScenarios {
			if *roundsSides == "overload" {
				break
			}
			lam := scenarioRate(t, sc, 0.97)
			if sc.fixed > 0 {
				lam = sc.fixed
			}
			point("stable", round, sc, lam, round)
		}
		if *roundsPower <= 0 || (round+1)%*roundsPower != 0 {
			continue
		}
		q := (round+1) / *roundsPower - 1
		for _, sc := range verdictScenarios {
			if sc.lambda >= 0 {
				point("overload", q, sc, scenarioRate(t, sc, 1.01), roundsOverloadSeeds+q)
			}
		}
	}
}

// cpuSeconds is the process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// TestVerdictCalibrationTally reads a TestVerdictCalibrationRounds log and
// prints, per side and in all: the points, those called unstable (on the
// stable side, false verdicts), the exact (Clopper–Pearson) 95% bound —
// upper on the false-verdict rate, lower on the power — per workload and
// scenario, the rules that decided, and the CPU seconds spent.
func TestVerdictCalibrationTally(t *testing.T) {
	if *tallyFile == "" {
		t.Skip("-verdict.tally not set")
	}
	f, err := os.Open(*tallyFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(*tallyFile, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	type count struct {
		points, unstable int
		cpu              float64
	}
	counts := map[string]*count{}
	add := func(key string, unstable bool, cpu float64) {
		c := counts[key]
		if c == nil {
			c = &count{}
			counts[key] = c
		}
		c.points++
		if unstable {
			c.unstable++
		}
		c.cpu += cpu
	}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) != strings.Count(roundsHeader, "\t")+1 || cols[0] == "side" {
			continue // the header, or a line cut by a stop
		}
		cpu, _ := strconv.ParseFloat(cols[16], 64)
		unstable := cols[6] != string(sim.VerdictStable)
		side := cols[0]
		add(side+"\tall", unstable, cpu)
		add(side+"\tworkload "+cols[3], unstable, cpu)
		add(side+"\t"+cols[2], unstable, cpu)
		add(side+"\ttest "+cols[7], unstable, cpu)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		c := counts[k]
		bound := fmt.Sprintf("; false-verdict rate ≤ %.3g (exact, 95%%)", falseBound(c.unstable, c.points))
		switch {
		case strings.Contains(k, "\ttest "):
			bound = "" // points decided by one rule: no rate to bound
		case strings.HasPrefix(k, "overload"):
			bound = fmt.Sprintf("; power ≥ %.3g (exact, 95%%)", powerBound(c.unstable, c.points))
		}
		t.Logf("%s: %d points, %d unstable%s; %.0f CPU-s (%.2f a point)", k, c.points, c.unstable, bound, c.cpu, c.cpu/float64(c.points))
	}
}
