package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
	"github.com/msjfarm/msjfarm/monitor"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// TestSummaryTable: one number format (no 4670.1 beside 4.2e+02),
// UNSTABLE (u of n), axis values in the same format. A summary written
// before the verdict column marks an unstable point by n_unstable > 0: its
// means are bounds (≥ x, no interval), as aggregate.IsBound rules.
func TestSummaryTable(t *testing.T) {
	csv := "point,policy,params,workload,servers,threshold,arrival_rate,load,replications,n,n_failed,n_unstable," +
		"mean_response_mean,mean_response_hw,weighted_mean_response_mean,weighted_mean_response_hw,jain_mean\n" +
		"p1,fcfs,{},w,32,31,7.7,0.98656249999,3,3,0,1,4670.1234,424.66,0.00012346,12.25,1\n" +
		"p2,msfq,\"{\"\"threshold\"\":31}\",w,32,0.5,2,0.25625,3,3,0,0,2.0012,0.057768,2.4611,0.032381,0.97821\n"
	var b bytes.Buffer
	if err := printSummaryTable(&b, strings.NewReader(csv)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"≥ 4670 ", "≥ 0.0001235", "0.9866", "UNSTABLE (1 of 3)", "0.05777", "0.9782", "7.7 "} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "424.7") || strings.Contains(out, "12.25") {
		t.Errorf("an interval printed around a bound:\n%s", out)
	}
	if strings.Contains(out, "e+") || strings.Contains(out, "e-0") || strings.Contains(out, "runs)") {
		t.Errorf("mixed number formats or old UNSTABLE wording:\n%s", out)
	}
}

// TestSummaryTableScenario: a swept servers axis (or workload) is a
// column of its own, headed k; rows that differed only in λ had no k.
// A campaign of one k and one workload shows neither (TestSummaryTable).
func TestSummaryTableScenario(t *testing.T) {
	csv := "point,policy,params,workload,servers,arrival_rate,load,replications,n,n_failed,n_unstable," +
		"mean_response_mean,mean_response_hw,weighted_mean_response_mean,weighted_mean_response_hw,jain_mean\n" +
		"p1,fcfs,{},hw,32,3.232,0.5,2,2,0,0,2.214,1.741,19.1,16.02,0.6091\n" +
		"p2,fcfs,{},hw,128,6.465,0.5,2,2,0,0,2.176,0.09761,19.04,3.395,0.5951\n"
	var b bytes.Buffer
	if err := printSummaryTable(&b, strings.NewReader(csv)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if f := strings.Fields(lines[0]); len(f) < 3 || f[1] != "k" || f[2] != "λ" {
		t.Fatalf("header %q: want policy, k, λ", lines[0])
	}
	for i, k := range []string{"32", "128"} {
		if f := strings.Fields(lines[i+1]); len(f) < 2 || f[1] != k {
			t.Errorf("row %q: want k = %s", lines[i+1], k)
		}
	}
	if strings.Contains(lines[0], "workload") {
		t.Errorf("one workload shown as a column: %q", lines[0])
	}
}

// TestSummaryTableVerdicts: the status follows the pooled verdict (a
// stable point with a flagged minority says so, not UNSTABLE), truncated
// points say TRUNCATED, and lower bounds print as ≥ x without a CI.
func TestSummaryTableVerdicts(t *testing.T) {
	head := "point,policy,params,workload,servers,arrival_rate,load,replications,n,n_failed,n_unstable,n_truncated,lower_bound,verdict," +
		"mean_response_mean,mean_response_hw,weighted_mean_response_mean,weighted_mean_response_hw,jain_mean\n"
	tests := []struct {
		name, row string
		want      []string
		not       []string
	}{
		{"stable clean", "p,fcfs,{},w,32,2,0.5,10,10,0,0,0,false,stable,2.5,0.1,2.6,0.2,0.9",
			[]string{"2.5 ", "0.1 "}, []string{"UNSTABLE", "TRUNCATED", "flagged", "≥"}},
		{"stable one flagged", "p,fcfs,{},w,32,2,0.5,10,10,0,1,0,false,stable,2.5,0.1,2.6,0.2,0.9",
			[]string{"stable (1 of 10 flagged)"}, []string{"UNSTABLE"}},
		{"stable flagged and truncated", "p,fcfs,{},w,32,2,0.5,10,10,0,1,1,false,stable,2.5,0.1,2.6,0.2,0.9",
			[]string{"stable (2 of 10 flagged)"}, []string{"UNSTABLE", "TRUNCATED"}},
		{"unstable", "p,fcfs,{},w,32,4,0.5,10,10,0,7,0,false,unstable,2.5,0.1,2.6,0.2,0.9",
			[]string{"UNSTABLE (7 of 10)", "≥ 2.5", "≥ 2.6"}, []string{"TRUNCATED", "flagged", "0.1 ", "0.2 "}},
		{"truncated bound", "p,fcfs,{},w,32,4,0.5,10,10,0,2,6,true,truncated,28.6123,5.4321,30.1,4.1234,0.9",
			[]string{"TRUNCATED (6 of 10)", "≥ 28.61", "≥ 30.1"}, []string{"UNSTABLE", "5.432", "4.123"}},
		{"stable bound", "p,fcfs,{},w,32,2,0.5,10,10,0,0,1,true,stable,28.6,5,30.1,4,0.9",
			[]string{"≥ 28.6", "stable (1 of 10 flagged)"}, []string{"UNSTABLE"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := printSummaryTable(&b, strings.NewReader(head+tc.row+"\n")); err != nil {
				t.Fatal(err)
			}
			rows := strings.Split(strings.TrimSpace(b.String()), "\n")
			if len(rows) != 2 {
				t.Fatalf("want a header and one row:\n%s", b.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(rows[1]+" ", w) {
					t.Errorf("no %q in %q", w, rows[1])
				}
			}
			for _, w := range tc.not {
				if strings.Contains(rows[1], w) {
					t.Errorf("%q in %q", w, rows[1])
				}
			}
		})
	}
}

// TestProgressPlain: without a terminal, plain lines with counts, rate and
// ETA; failed tasks named by policy, parameters, axes and replication.
func TestProgressPlain(t *testing.T) {
	camp := &sweep.Campaign{Tasks: []sweep.Task{{ID: "aaaa", Policy: "msfq", Params: map[string]any{"threshold": 31.0},
		Axes: map[string]any{"threshold": 31.0, "arrival_rate": 7.5}, ArrivalRate: 7.5, Replication: 2}}}
	var b bytes.Buffer
	p := newProgress(&b, 0).describe(camp)
	if p.tty {
		t.Fatal("a buffer is a terminal")
	}
	p.update(&protocol.Status{Total: 10, Done: 2, Failed: 1, Running: 2})
	p.update(&protocol.Status{Total: 10, Done: 3, Failed: 1, Running: 2}) // within plainEvery: not printed
	p.finish(&protocol.Status{Campaign: "c1", State: "done", Total: 10, Done: 9, Failed: 1,
		Errors: []string{"aaaa: policy panicked", "bbbb: unknown task"}})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("want 4 lines, got\n%s", b.String())
	}
	if !strings.HasPrefix(lines[0], "3/10 done (30%), 1 failed, 2 running, ") || !strings.Contains(lines[0], "tasks/s") || !strings.Contains(lines[0], "ETA ") {
		t.Errorf("progress line %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "10/10 done (100%), 1 failed") || !strings.Contains(lines[1], "campaign c1 done") {
		t.Errorf("final line %q", lines[1])
	}
	if want := "  failed: msfq threshold=31 arrival_rate=7.5 rep 2: policy panicked (task aaaa)"; lines[2] != want {
		t.Errorf("failed task: %q, want %q", lines[2], want)
	}
	if lines[3] != "  failed: bbbb: unknown task" {
		t.Errorf("unknown task: %q", lines[3])
	}
}

// TestProgressNamesGeneratedTasks: a planned campaign (tasks generated,
// not held: sweep.Plan) gets its failed tasks named at the end from one
// walk of its tasks, the progress view holding none of them while it
// runs; over waitDescribeTasks, or for a task the campaign does not have,
// the coordinator's line is printed as it is.
func TestProgressNamesGeneratedTasks(t *testing.T) {
	f, err := sweep.Parse([]byte("name: g\nseed: 1\nworkload: one-or-all\npolicies: [fcfs]\nreplications: 2\n"+
		"run: {arrivals: 100}\naxes:\n  load: [0.2, 0.5, 0.8]\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	camp, err := sweep.Plan(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	if camp.Tasks != nil {
		t.Fatal("Plan materialized the tasks")
	}
	// 3 loads × 2 replications = 6 tasks; name the 4th (load 0.5, rep 1)
	// and the last (load 0.8, rep 1).
	fourth, err := camp.TaskAt(3)
	if err != nil {
		t.Fatal(err)
	}
	last, err := camp.TaskAt(5)
	if err != nil {
		t.Fatal(err)
	}
	p := newProgress(io.Discard, 0).describe(camp)
	errs := []string{last.ID + ": policy panicked", "ffff: unknown task", fourth.ID + ": timed out"}
	got := p.failedTasks(errs)
	if len(got) != 3 || got[last.ID] == nil || got[fourth.ID] == nil || got["ffff"] != nil {
		t.Fatalf("failed tasks found: %v", got)
	}
	// λ is load 0.5 times one-or-all's capacity, the task's own rate.
	if want := "fcfs load=0.5 λ=" + sig(fourth.ArrivalRate, 6) + " rep 1: timed out (task " + fourth.ID + ")"; failedLine(got, errs[2]) != want {
		t.Errorf("failed line %q, want %q", failedLine(got, errs[2]), want)
	}
	if failedLine(got, errs[1]) != errs[1] {
		t.Errorf("unknown task: %q", failedLine(got, errs[1]))
	}
	if p.failedTasks(nil) != nil {
		t.Error("no errors: a walk of the campaign anyway")
	}
	if newProgress(io.Discard, 0).failedTasks(errs) != nil {
		t.Error("no campaign: tasks named")
	}
}

// TestSummaryTableConverged: a stable point whose pooled converged verdict
// failed gets NOT CONVERGED with its count, beside any other status; an
// unstable one does not (its verdict says more); a converged or unknown
// one nothing.
func TestSummaryTableConverged(t *testing.T) {
	head := "point,policy,params,workload,servers,arrival_rate,load,replications,n,n_failed,n_unstable,n_truncated,lower_bound,verdict," +
		"converged,n_unconverged,mser_fraction,min_cycles,mean_response_mean,mean_response_hw,weighted_mean_response_mean,weighted_mean_response_hw,jain_mean\n"
	for _, tc := range []struct{ row, want string }{
		{"p,msfq,{},w,32,7,0.9,5,5,0,0,0,false,stable,false,3,0.1,12,25,1,26,1,0.9", "NOT CONVERGED (3 of 5)"},
		{"p,msfq,{},w,32,7,0.9,5,5,0,1,0,false,stable,false,3,0.7,12,25,1,26,1,0.9", "stable (1 of 5 flagged); NOT CONVERGED (3 of 5)"},
		{"p,fcfs,{},w,32,7,0.9,5,5,0,5,0,false,unstable,false,5,0.75,,25,1,26,1,0.9", "UNSTABLE (5 of 5)"},
		{"p,fcfs,{},w,32,2,0.3,5,5,0,0,0,false,stable,true,1,0,,2,0.1,2,0.1,0.9", ""},
		{"p,fcfs,{},w,32,2,0.3,5,5,0,0,0,false,stable,,0,,,2,0.1,2,0.1,0.9", ""},
	} {
		var b bytes.Buffer
		if err := printSummaryTable(&b, strings.NewReader(head+tc.row+"\n")); err != nil {
			t.Fatal(err)
		}
		rows := strings.Split(strings.TrimSpace(b.String()), "\n")
		row := strings.TrimSpace(rows[len(rows)-1])
		switch {
		case tc.want == "" && strings.Contains(row, "CONVERGED"):
			t.Errorf("%s: %q", tc.row, row)
		case tc.want != "" && !strings.HasSuffix(row, tc.want):
			t.Errorf("%s: %q, want it to end with %q", tc.row, row, tc.want)
		case strings.Contains(tc.want, "UNSTABLE") && strings.Contains(row, "CONVERGED"):
			t.Errorf("%s: NOT CONVERGED beside UNSTABLE: %q", tc.row, row)
		}
	}
}

// TestLiveRateMatchesTerminal: on one run's timeline the live page's rate
// and ETA (monitor.RunProgress from the records, monitor.RunRate) agree
// with the terminal's progress line within 10%.
//
// The run: the terminal starts 0.5 s before the first task (submission);
// 2 slots run 2 s tasks from t0, so at t0 + 30 s 30 tasks have finished
// (15 per slot); 5 tasks were reused from an earlier run (their records
// are a day old); 100 tasks in all. Terminal: n = 35 − 5 = 30 over 30.5 s,
// 0.984 tasks/s, ETA 65/0.984 = 66 s. Live page: 30 over 30 s (from the
// first task's start), 1 task/s, ETA 65 s: 1.7% apart, the terminal's
// start-up half second.
func TestLiveRateMatchesTerminal(t *testing.T) {
	now := time.Now()
	t0 := now.Add(-30 * time.Second)
	recs := map[string]*record.Record{}
	for j := 0; j < 30; j++ {
		started := t0.Add(time.Duration(j/2) * 2 * time.Second)
		recs[fmt.Sprint("run", j)] = &record.Record{Provenance: record.Provenance{Started: started, WallSeconds: 2}}
	}
	for j := 0; j < 5; j++ {
		recs[fmt.Sprint("old", j)] = &record.Record{Provenance: record.Provenance{Started: now.Add(-24 * time.Hour), WallSeconds: 2}}
	}
	serverStart := t0.Add(-500 * time.Millisecond)
	n, runStart := monitor.RunProgress(recs, serverStart)
	if n != 30 || !runStart.Equal(t0) {
		t.Fatalf("RunProgress: %d tasks from %v, want 30 from t0", n, runStart.Sub(t0))
	}
	liveRate, liveETA := monitor.RunRate(n, now.Sub(runStart), 100-35)

	p := newProgress(io.Discard, 5)
	p.start = serverStart
	termRate, termETA := p.rateETA(&protocol.Status{Total: 100, Done: 35})
	eta, err := time.ParseDuration(termETA)
	if err != nil {
		t.Fatalf("terminal ETA %q", termETA)
	}
	if r := liveRate / termRate; r < 0.9 || r > 1.1 {
		t.Errorf("rate: live %.3g/s, terminal %.3g/s", liveRate, termRate)
	}
	if r := liveETA / eta.Seconds(); r < 0.9 || r > 1.1 {
		t.Errorf("ETA: live %.3g s, terminal %s", liveETA, termETA)
	}
	t.Logf("live %.3g tasks/s ETA %.0f s; terminal %.3g tasks/s ETA %s", liveRate, liveETA, termRate, termETA)
}

// TestRefusalsShown: task messages refused by a worker (a worker of
// another msjfarm version refuses every one: their content no longer
// hashes to their ids) are printed once each by the progress and listed
// by status. The progress read "0/8 done, 0 failed, 0 running, ETA ?"
// for ever, and only status --json said why.
func TestRefusalsShown(t *testing.T) {
	refusal := `task 4892ab: refused by w1: its task content hashes to "0b7b", not to its id 4892ab (forged, corrupted, or from another msjfarm version)`
	var b bytes.Buffer
	p := newProgress(&b, 0)
	s := &protocol.Status{Campaign: "c1", Total: 8, Rejected: []string{refusal}}
	p.update(s)
	p.update(s)
	if got := strings.Count(b.String(), refusal); got != 1 {
		t.Errorf("the refusal printed %d times, want once:\n%s", got, b.String())
	}
	if !strings.Contains(b.String(), "msjfarm: campaign c1: "+refusal+"\n") {
		t.Errorf("progress output:\n%s", b.String())
	}
	var st bytes.Buffer
	printStatus(&st, []protocol.Status{*s})
	if !strings.Contains(st.String(), "\n  c1: "+refusal+"\n") {
		t.Errorf("status does not list the refusal:\n%s", st.String())
	}
}

// TestStuckShown: why a running campaign does not move — its tasks cannot
// be queued (Reconciling) or its summary written (Finalising) — is
// printed by the progress each time it changes and by status, with the
// refusals beyond the ten listed counted. Status printed neither: the
// table read "running", the reason only in --json.
func TestStuckShown(t *testing.T) {
	rec := "reading the campaign's results and task stream and publishing its missing tasks failed 3 times in a row (tried again at each reconcile): insufficient resources"
	fin := "finalising the campaign failed twice (tried again at each reconcile): no space left on device"
	var b bytes.Buffer
	p := newProgress(&b, 0)
	s := &protocol.Status{Campaign: "c1", State: protocol.CampaignRunning, Total: 8, Reconciling: rec,
		Rejected: []string{"task a: refused by w1: x"}, RejectedTotal: 12}
	p.update(s)
	p.update(s)
	if got := strings.Count(b.String(), rec); got != 1 {
		t.Errorf("the reconcile failure printed %d times, want once:\n%s", got, b.String())
	}
	s.Reconciling, s.Finalising = "", fin
	p.update(s)
	if !strings.Contains(b.String(), "msjfarm: campaign c1: "+fin+"\n") {
		t.Errorf("progress output:\n%s", b.String())
	}
	s.Reconciling = rec
	var st bytes.Buffer
	printStatus(&st, []protocol.Status{*s})
	for _, want := range []string{"\n  c1: " + rec + "\n", "\n  c1: " + fin + "\n", "\n  c1: … and 11 more task messages refused\n"} {
		if !strings.Contains(st.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, st.String())
		}
	}
}

// TestProgressQuiet: run -q drops the progress line, not the notes of
// why the campaign does not move: with -q a run on a store whose disk was
// full waited without a word.
func TestProgressQuiet(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 0)
	p.quiet = true
	p.update(&protocol.Status{Campaign: "c1", Total: 10, Done: 2, Running: 2,
		Paused: []string{"worker local: paused since 12:00:00: its store is unavailable (no space left on device)"}})
	p.update(&protocol.Status{Campaign: "c1", Total: 10, Done: 2, Reconciling: "publishing failed 3 times in a row"})
	out := b.String()
	for _, want := range []string{"msjfarm: campaign c1: worker local: paused since", "msjfarm: campaign c1: publishing failed 3 times"} {
		if !strings.Contains(out, want) {
			t.Errorf("quiet progress without %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "2/10 done") {
		t.Errorf("quiet progress printed its line:\n%s", out)
	}
}

// TestMeanAtHW: the mean to its half-width's last printed decimal.
func TestMeanAtHW(t *testing.T) {
	for _, tc := range []struct{ mean, hw, want string }{
		{"10.9977", "1.0853", "10.998"},   // hw prints 1.085: three decimals
		{"2.0012", "0.057768", "2.00120"}, // hw 0.05777: five
		{"4670.1234", "424.66", "4670.1"}, // hw 424.7: one
		{"123456.7", "12345", "123457"},   // hw 12350: none
		{"3.5", "", "3.5"},                // no half-width: num
		{"3.5", "1e-07", "3.5"},           // exponent form: num
		{"0.000123456", "1.2e-09", "0.0001235"},
	} {
		if got := meanAtHW(tc.mean, tc.hw); got != tc.want {
			t.Errorf("meanAtHW(%s, %s) = %s, want %s", tc.mean, tc.hw, got, tc.want)
		}
	}
}

// TestProgressNotesBounded: a flood of 10^4 malformed task messages,
// listed ten a status and each status polled twice, as anyone holding
// the farm's NATS credentials can publish. The progress printed none of
// them; printing each once would have flooded the terminal and grown its
// memory of lines printed without bound. It prints the first maxNotes
// once each and then, once at the end, how many more it saw.
func TestProgressNotesBounded(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 0)
	line := func(i int) string {
		return fmt.Sprintf("malformed task message %d on msjfarm.tasks.flood.%d (9 bytes, published 2026-12-03T08:00:00Z), terminated by worker w1: invalid character 'x' looking for beginning of value", i+1, i)
	}
	const n = 10000
	var last *protocol.Status
	for i := 0; i < n; i += 10 {
		s := &protocol.Status{Campaign: "c1", State: protocol.CampaignRunning, Total: 8, MalformedTotal: 64}
		for j := i; j < i+10; j++ {
			s.Malformed = append(s.Malformed, line(j))
		}
		p.update(s)
		p.update(s)
		last = s
	}
	if len(p.noted) != maxNotes || len(p.unshown) > 10 {
		t.Fatalf("the progress holds %d lines printed and %d unshown, want %d and at most ten", len(p.noted), len(p.unshown), maxNotes)
	}
	fin := *last
	fin.State, fin.Done = protocol.CampaignDone, 8
	p.finish(&fin)
	p.finish(&fin) // said once
	out := b.String()
	if got := strings.Count(out, "msjfarm: campaign c1: malformed task message "); got != maxNotes {
		t.Errorf("%d malformed lines printed, want %d:\n%s", got, maxNotes, out)
	}
	for i := range maxNotes {
		if strings.Count(out, "msjfarm: campaign c1: "+line(i)+"\n") != 1 {
			t.Fatalf("line %d not printed once:\n%s", i, out)
		}
	}
	more := fmt.Sprintf("msjfarm: campaign c1: … and %d more such lines not shown (`msjfarm status c1` lists those the coordinator keeps)\n", n-maxNotes)
	if strings.Count(out, more) != 1 || strings.Count(out, "more such lines") != 1 {
		t.Errorf("want %q once:\n%s", more, out)
	}
}

// heldRunner runs a task once held is closed (or its run is stopped).
type heldRunner struct{ held chan struct{} }

func (h heldRunner) Run(ctx context.Context, t *sweep.Task, p func(int64, int64)) (*worker.Outcome, error) {
	select {
	case <-h.held:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return worker.InProcess{}.Run(ctx, t, p)
}

// TestSubmitWaitShowsMalformed: garbage published onto a campaign's task
// subjects while `submit --wait` watches it (anyone holding the farm's
// NATS credentials can) is terminated by the worker that draws it and
// listed by status under the campaign; the waiting progress said nothing
// of it. It now prints it once, though status lists it at every poll.
func TestSubmitWaitShowsMalformed(t *testing.T) {
	url, nc := natstest.ConnectEmbedded(t)
	st, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runCoordinator(t, url, st)
	f, err := sweep.Parse([]byte("name: garbage\nworkload: one-or-all\naxes:\n  arrival_rate: [1]\npolicies: [fcfs]\nreplications: 2\nrun: {arrivals: 1000}\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rep protocol.SubmitReply
	if err := protocol.Request(t.Context(), nc, protocol.APISubmit, protocol.SubmitRequest{Spec: f}, &rep); err != nil {
		t.Fatal(err)
	}
	// Every task held, and a slot free for the garbage.
	held := make(chan struct{})
	w, err := worker.New(context.Background(), worker.Options{Conn: nc, Store: st, Concurrency: rep.Tasks + 1,
		FetchWait: 200 * time.Millisecond, Runner: heldRunner{held}})
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(context.Background())
	wdone := make(chan error, 1)
	go func() { wdone <- w.Run(wctx) }()
	defer func() { wcancel(); <-wdone }()
	var polls atomic.Int64
	sub, err := nc.Subscribe(protocol.APIStatus, func(*nats.Msg) { polls.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	errPath := filepath.Join(t.TempDir(), "stderr")
	errf, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	se := os.Stderr
	os.Stderr = errf
	restored := false
	restore := func() {
		if !restored {
			os.Stderr, restored = se, true
			errf.Close()
		}
	}
	defer restore()
	waited := make(chan int, 1)
	go func() { waited <- waitCampaign(context.Background(), nc, rep, nil) }()
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); !ok(); time.Sleep(50 * time.Millisecond) { // a ceiling for a hang
			if time.Now().After(deadline) {
				restore()
				out, _ := os.ReadFile(errPath)
				t.Fatalf("%s: not within two minutes; submit --wait wrote\n%s", what, out)
			}
		}
	}
	until("the first poll", func() bool { return polls.Load() > 0 })
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	subject := protocol.TaskSubject(rep.Campaign, "garbage")
	if _, err := js.Publish(t.Context(), subject, []byte("\x00 not a task")); err != nil {
		t.Fatal(err)
	}
	shown := "msjfarm: campaign " + rep.Campaign + ": malformed task message "
	until("the malformed message shown", func() bool {
		out, _ := os.ReadFile(errPath)
		return strings.Contains(string(out), shown) && strings.Contains(string(out), " on "+subject+" (")
	})
	k := polls.Load()
	until("three polls more", func() bool { return polls.Load() >= k+3 })
	close(held)
	var code int
	select {
	case code = <-waited:
	case <-time.After(2 * time.Minute): // a ceiling for a hang
		restore()
		t.Fatal("submit --wait did not end with the campaign")
	}
	restore()
	data, err := os.ReadFile(errPath)
	if err != nil {
		t.Fatal(err)
	}
	out := string(data)
	if code != 0 || strings.Count(out, shown) != 1 || strings.Count(out, subject) != 1 || strings.Contains(out, "more such lines") {
		t.Fatalf("submit --wait: exit %d, want 0 and the malformed message once:\n%s", code, out)
	}
}
