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
