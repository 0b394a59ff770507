package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestSummaryTableInfinity: a point of one replication has an unbounded
// half-width ("inf" in summary.csv), which the terminal's table printed
// "+Inf" beside index.html's "∞"; it prints "∞" now
// (aggregate.FormatInf), and the CSV's "inf" still reads as infinity.
func TestSummaryTableInfinity(t *testing.T) {
	csv := "policy,arrival_rate,load,n,n_failed,mean_response_mean,mean_response_hw,verdict,lower_bound\n" +
		"fcfs,1,0.5,1,0,10.9977,inf,stable,false\n"
	var out bytes.Buffer
	if err := printSummaryTable(&out, strings.NewReader(csv)); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "∞") || strings.Contains(got, "Inf") {
		t.Errorf("one replication's half-width not printed ∞:\n%s", got)
	}
}

// TestCompareCRNInfinity: `results --compare`'s CRN × column (unpaired
// half-width over paired) printed "+Inf" where the paired half-width is 0
// and "NaN" where both are, beside the "∞" and "—" of every other reading
// output. Two policies that decide alike (one class of one-server jobs)
// give the same response time in every pair of replications: a paired
// half-width of 0, "∞"; on 50 servers at load 0.02 no job ever waits, so
// the wait is 0 on both sides: no ratio, "—".
func TestCompareCRNInfinity(t *testing.T) {
	data := runSweepText(t, t.TempDir(), `name: crn-inf
seed: 3
servers: 50
classes:
  - {name: one, need: 1, share: 1, service: {dist: exp, mean: 1}}
axes:
  arrival_rate: [1]
policies: [fcfs, msf]
replications: 3
run: {arrivals: 1e3, warmup: 1e2}
`)
	code, out, errs := captured(t, func() int { return runResults([]string{"-storage", data, "crn-inf", "--compare", "msf,fcfs"}) })
	if code != 0 {
		t.Fatalf("results --compare: exit %d\n%s%s", code, out, errs)
	}
	// The CRN × cell follows each metric's verdict: E[T], weighted E[T],
	// E[W].
	var gains []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "msf" {
			for i, c := range f[:len(f)-1] {
				if c == "indistinguishable" {
					gains = append(gains, f[i+1])
				}
			}
		}
	}
	if strings.Join(gains, " ") != "∞ ∞ —" || strings.Contains(out, "Inf") || strings.Contains(out, "NaN") {
		t.Errorf("CRN × cells %q, want ∞ ∞ —:\n%s", gains, out)
	}
}
