package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
	"github.com/msjfarm/msjfarm/storage"
)

// limitTestSweep has 5 points (5 loads × 1 policy) of 3 replications:
// 15 tasks.
const limitTestSweep = `name: limits
seed: 1
workload: one-or-all
axes:
  load: [0.1, 0.2, 0.3, 0.4, 0.5]
policies:
  - fcfs
replications: 3
run: {arrivals: 1e3, warmup: 1e2, deadline: 1m}
`

// TestSweepLimits: a sweep over a limit is refused by submit and run and
// by their dry runs with exit code 2, naming the figure and the flag (or variable)
// that raises the limit, before anything is written or any server is
// reached (the NATS URL given answers nothing). run had no limits: a
// typo, replications: 1e9, held its dry run for hours listing task ids.
func TestSweepLimits(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(limitTestSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	size := len(limitTestSweep)
	data := filepath.Join(dir, "data")
	for _, tc := range []struct {
		name string
		args []string
		env  [2]string
		want string
	}{
		{"points", []string{"--max-points", "4"}, [2]string{}, "5 points, more than --max-points 4"},
		{"tasks", []string{"--max-tasks", "14"}, [2]string{}, "15 tasks (5 points × 3 replications), more than --max-tasks 14"},
		{"spec size", []string{"--max-spec-size", "100"}, [2]string{}, "bytes, more than --max-spec-size 100"},
		{"points from the environment", nil, [2]string{"MSJFARM_MAX_POINTS", "4"}, "more than --max-points 4: raise it with --max-points (or MSJFARM_MAX_POINTS)"},
		{"tasks from the environment", nil, [2]string{"MSJFARM_MAX_TASKS", "14"}, "(or MSJFARM_MAX_TASKS)"},
	} {
		for _, cmd := range []string{"submit", "run"} {
			for _, dry := range []bool{true, false} {
				t.Run(cmd+" "+tc.name, func(t *testing.T) {
					if tc.env[0] != "" {
						t.Setenv(tc.env[0], tc.env[1])
					}
					args := append([]string{cmd, "--storage", data}, tc.args...)
					if cmd == "submit" {
						args = append(args, "--nats-url", "nats://127.0.0.1:1")
					}
					if dry {
						args = append(args, "--dry-run")
					}
					code, _, errs := captured(t, func() int { return dispatch(append(args, sw)) })
					if code != 2 || !strings.Contains(errs, tc.want) {
						t.Fatalf("%v: exit %d, want 2 and %q in\n%s", args, code, tc.want, errs)
					}
					if tc.name == "spec size" && !strings.Contains(errs, sw+": "+strconv.Itoa(size)+" bytes") {
						t.Fatalf("the file's size (%d) is not named:\n%s", size, errs)
					}
					if _, err := os.Stat(data); !os.IsNotExist(err) {
						t.Fatalf("refused sweep created %s", data)
					}
				})
			}
		}
	}
	// Precision mode: what the campaign may grow to counts. Its initial
	// replications alone let max_replications 10^8 through.
	prec := filepath.Join(dir, "prec.yaml")
	if err := os.WriteFile(prec, []byte(limitTestSweep+"precision: {metric: mean_response, rel_half_width: 0.05, max_replications: 100000000}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"submit", "run"} {
		code, _, errs := captured(t, func() int {
			return dispatch([]string{cmd, "--dry-run", "--storage", data, "--max-tasks", "1000", prec})
		})
		if want := "500000000 tasks (5 points × 100000000 replications), more than --max-tasks 1000"; code != 2 || !strings.Contains(errs, want) || !strings.Contains(errs, "what the campaign may grow to") {
			t.Errorf("%s precision: exit %d, want 2 and %q in\n%s", cmd, code, want, errs)
		}
	}
	// At the limits, the dry run accepts it.
	code, out, errs := captured(t, func() int {
		return runSubmit([]string{"--dry-run", "--max-points", "5", "--max-tasks", "15", "--max-spec-size", strconv.Itoa(size), sw})
	})
	if code != 0 || !strings.Contains(out, "tasks            15\n") {
		t.Fatalf("at the limits: exit %d\n%s%s", code, out, errs)
	}
}

// TestSubmitSpecByReference: a sweep whose request does not fit in one
// message of the NATS server (max_payload 32 KiB here, for a 2,000-point
// sweep of about 40 KB; 1 MB is nats-server's default) is submitted by
// reference: the spec is stored in --storage under its content hash, the
// coordinator reads it from there, and the campaign's KV entry holds the
// key, not the spec. Without --storage the same submission is refused
// (exit 2) saying how to submit it.
func TestSubmitSpecByReference(t *testing.T) {
	dir := t.TempDir()
	var vals []string
	for i := range 2000 {
		vals = append(vals, strconv.FormatFloat(0.1+0.8*float64(i)/2000+1e-13, 'f', 15, 64))
	}
	sweepText := strings.Replace(limitTestSweep, "[0.1, 0.2, 0.3, 0.4, 0.5]", "["+strings.Join(vals, ", ")+"]", 1)
	sweepText = strings.Replace(sweepText, "replications: 3", "replications: 1", 1)
	sw := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(sw, []byte(sweepText), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: filepath.Join(dir, "js"), NoSigs: true, NoLog: true, MaxPayload: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(func() { protocol.StopEmbedded(srv) }) // after the coordinator's cleanup
	url := srv.ClientURL()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	data := filepath.Join(dir, "data")
	st, err := storage.Open(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	nc := runCoordinator(t, url, st)

	code, _, errs := captured(t, func() int { return runSubmit([]string{"--nats-url", url, sw}) })
	if code != 2 || !strings.Contains(errs, "more than one NATS message carries here (max_payload 32768): give the farm's --storage") {
		t.Fatalf("submit without storage: exit %d, want 2\n%s", code, errs)
	}
	code, out, errs := captured(t, func() int { return runSubmit([]string{"--nats-url", url, "--storage", data, sw}) })
	if code != 0 || !strings.Contains(out, ": 2000 tasks in 2000 points") || !strings.Contains(errs, "spec stored at specs/") {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errs)
	}
	id := strings.Fields(out)[1]
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	h, err := protocol.Open(ctx, js, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	e, err := h.Campaigns.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var cs protocol.CampaignState
	if err := json.Unmarshal(e.Value(), &cs); err != nil {
		t.Fatal(err)
	}
	if cs.Spec != nil || cs.SpecKey == "" || len(e.Value()) > 1024 {
		t.Fatalf("campaign entry of %d bytes: %s", len(e.Value()), e.Value())
	}
	f, err := protocol.GetSpec(ctx, st, cs.SpecKey)
	if err != nil || f.Name != "limits" {
		t.Fatalf("stored spec: %v", err)
	}

	// Tasks too large for one message (every task carries its workload:
	// 800 classes here): refused before anything is created. The campaign
	// was created, its publication failed, and it stayed running for ever.
	var cl strings.Builder
	for i := range 800 {
		fmt.Fprintf(&cl, "  - {name: class-%d, need: 1, share: 1, service: {dist: exp, mean: 1}}\n", i)
	}
	wide := filepath.Join(dir, "wide.yaml")
	body := "name: wide\nservers: 4\nclasses:\n" + cl.String() + "axes:\n  arrival_rate: [0.1]\npolicies: [fcfs]\nreplications: 1\nrun: {arrivals: 1000}\n"
	if err := os.WriteFile(wide, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = captured(t, func() int { return runSubmit([]string{"--nats-url", url, "--storage", data, wide}) })
	if code == 0 || !strings.Contains(errs, "a task's message is") || !strings.Contains(errs, "more than the 28672 the NATS server takes in one") {
		t.Fatalf("submit of tasks too large: exit %d\n%s", code, errs)
	}
	code, out, _ = captured(t, func() int { return dispatch([]string{"status", "--nats-url", url}) })
	if code != 0 || strings.Contains(out, "wide") {
		t.Errorf("the refused campaign is listed (exit %d):\n%s", code, out)
	}
}

// runCoordinator runs a coordinator on the NATS server at url with store
// st until the test ends, and returns its connection.
// testFarm is a farm for a submission test: an embedded NATS server, a
// store in the test's directory with a coordinator on it (and two
// in-process workers with workers), and a sweep file of body beside it.
type testFarm struct{ dir, url, store, sweep string }

func startTestFarm(t *testing.T, body string, workers bool) testFarm {
	t.Helper()
	dir := t.TempDir()
	f := testFarm{dir: dir, url: natstest.StartEmbedded(t), store: filepath.Join(dir, "farm"), sweep: filepath.Join(dir, "s.yaml")}
	st, err := storage.Open(context.Background(), f.store)
	if err != nil {
		t.Fatal(err)
	}
	if workers {
		runFarm(t, f.url, st)
	} else {
		runCoordinator(t, f.url, st)
	}
	if err := os.WriteFile(f.sweep, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func runCoordinator(t *testing.T, url string, st storage.Store) *nats.Conn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	nc, err := protocol.Connect(protocol.ConnOptions{URL: url, Name: "test-coordinator"})
	if err != nil {
		t.Fatal(err)
	}
	co, err := coordinator.New(ctx, coordinator.Options{Conn: nc, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- co.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; nc.Close() })
	<-co.Ready()
	return nc
}

// TestSubmitToAnotherStore: submit --storage names where it stages the
// spec, trace and pins, and where its user will look for the results; a
// store that is not the coordinator's is refused. One that does not exist
// (a mistyped directory) is refused by submit, which knows the running
// coordinator's store from its lease: exit 2, naming both, and nothing
// is made (it was made, with an identity, then refused by the coordinator:
// a stray store). Another farm's store is refused by the coordinator,
// exit 1, the store given named too. Before, it ran with its results in
// the farm's store without a word. A submission made before its farm's
// coordinator first starts is TestSubmitBeforeTheCoordinator's.
func TestSubmitToAnotherStore(t *testing.T) {
	f := startTestFarm(t, limitTestSweep, false)
	dir, url, sw := f.dir, f.url, f.sweep
	other := filepath.Join(dir, "other")
	code, _, errs := captured(t, func() int { return runSubmit([]string{"--nats-url", url, "--storage", other, sw}) })
	if code != 2 || !strings.Contains(errs, "--storage "+other+" does not exist, so it is not the farm's store: the farm's coordinator ") ||
		!strings.Contains(errs, "storage file://"+filepath.Join(dir, "farm")+") has store ") {
		t.Fatalf("submit to a store that does not exist: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatalf("the refused submission made %s (%v)", other, err)
	}
	ost, err := storage.Open(context.Background(), other) // another farm's store
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storage.ID(context.Background(), ost); err != nil {
		t.Fatal(err)
	}
	code, _, errs = captured(t, func() int { return runSubmit([]string{"--nats-url", url, "--storage", other, sw}) })
	if code != 1 || !strings.Contains(errs, "is not this coordinator's") || !strings.Contains(errs, "(--storage "+other+")") {
		t.Fatalf("submit to another store: exit %d\n%s", code, errs)
	}
	code, out, errs := captured(t, func() int { return runSubmit([]string{"--nats-url", url, "--storage", filepath.Join(dir, "farm"), sw}) })
	if code != 0 || !strings.HasPrefix(out, "campaign ") {
		t.Fatalf("submit to the farm's store: exit %d\n%s%s", code, out, errs)
	}
}

// TestSubmitBeforeTheCoordinator: submissions made before the farm's
// coordinator first starts wait for it, their stores made with an
// identity (no coordinator's lease says which store the farm has). The
// one whose --storage is the farm's runs once the coordinator starts on
// it: a submit that refused a store without an identity broke this. The
// one whose --storage was mistyped is refused by the coordinator (exit
// 1), and the store it made is removed: it stayed behind.
func TestSubmitBeforeTheCoordinator(t *testing.T) {
	dir := t.TempDir()
	url := natstest.StartEmbedded(t)
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(limitTestSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	farm, typo := filepath.Join(dir, "farm"), filepath.Join(dir, "frm")
	type result struct {
		code     int
		out, err string
	}
	submit := func(store string) <-chan result {
		done := make(chan result, 1)
		go func() {
			code, out, errs := msjfarm(t, []string{"HOME=" + dir}, "submit", "--nats-url", url, "--storage", store, "--plugin-trial=false", sw)
			done <- result{code, out, errs}
		}()
		return done
	}
	farmDone, typoDone := submit(farm), submit(typo)
	for _, d := range []string{farm, typo} {
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(d, storage.IDKey)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no store identity in %s within 2 minutes", d)
			}
		}
	}
	st, err := storage.Open(context.Background(), farm)
	if err != nil {
		t.Fatal(err)
	}
	runCoordinator(t, url, st)
	for _, c := range []struct {
		name string
		done <-chan result
	}{{"farm", farmDone}, {"typo", typoDone}} {
		var r result
		select {
		case r = <-c.done:
		case <-time.After(4 * time.Minute): // submit waits 5 minutes for a coordinator
			t.Fatalf("the %s submission still waiting 4 minutes after the coordinator started", c.name)
		}
		switch c.name {
		case "farm":
			if r.code != 0 || !strings.HasPrefix(r.out, "campaign ") {
				t.Errorf("submit to the farm's store before its coordinator started: exit %d\n%s%s", r.code, r.out, r.err)
			}
		case "typo":
			if r.code != 1 || !strings.Contains(r.err, "is not this coordinator's") ||
				!strings.Contains(r.err, "(--storage "+typo+", which this submission made, is removed again)") {
				t.Errorf("submit to a mistyped store before the coordinator started: exit %d\n%s%s", r.code, r.out, r.err)
			}
			if _, err := os.Stat(typo); !os.IsNotExist(err) {
				t.Errorf("the refused submission left %s (%v)", typo, err)
			}
		}
	}
}

// TestSubmitAgainKeepsVerify: `submit` of a campaign submitted before
// with --verify, again without it (to resume or watch it, as many
// messages advise), keeps the campaign's verification and says so;
// --verify 0 still turns it off. The second submission turned it off
// without a word.
func TestSubmitAgainKeepsVerify(t *testing.T) {
	f := startTestFarm(t, limitTestSweep, false)
	url, farm, sw := f.url, f.store, f.sweep
	const kept = "spot verification of 0.5 of its tasks kept from its earlier submission (--verify 0 turns it off)"
	for _, c := range []struct {
		args []string
		said bool
	}{
		{[]string{"--verify", "0.5"}, false},
		{nil, true},
		{[]string{"--verify", "0"}, false},
		{nil, false},
	} {
		args := append(append([]string{"--nats-url", url, "--storage", farm}, c.args...), sw)
		code, out, errs := captured(t, func() int { return runSubmit(args) })
		if code != 0 || strings.Contains(out, kept) != c.said {
			t.Fatalf("submit %v: exit %d, said %q: %v\n%s%s", c.args, code, kept, !c.said, out, errs)
		}
	}
}
