package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker"
)

// limitStoreSweep is a limit search of one round (8 replications of
// 2·10^3 arrivals, a few seconds on one worker).
const limitStoreSweep = `name: store-limit
seed: 3
workload: one-or-all
policies: [fcfs]
replications: 2
run: {arrivals: 2e3, warmup: 2e2}
limit: {lo: 2, hi: 6, rel_tol: 0.5, probes: 2}
`

// runFarm runs a coordinator with store st and a worker of two
// in-process replications on the NATS server at url until the test ends.
func runFarm(t *testing.T, url string, st storage.Store) {
	t.Helper()
	nc := runCoordinator(t, url, st)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := worker.New(ctx, worker.Options{Conn: nc, Store: st, Concurrency: 2, Runner: worker.InProcess{}, FetchWait: 250 * time.Millisecond})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done }) // before the coordinator's
}

// TestSubmitLimitToAnotherStore: submit of a sweep with a limit block
// checks --storage as a plain submission does (TestSubmitToAnotherStore).
// A store that does not exist while the farm's coordinator runs is
// refused by submit, exit 2, naming both, and nothing is made; another
// farm's store is refused by the coordinator, exit 1, naming the store
// given. Before, the search made --storage and sent no store identity:
// the farm ran its rounds into its own store while the search looked for
// them in the one given ("task … has no result"), and the mistyped store
// stayed behind.
func TestSubmitLimitToAnotherStore(t *testing.T) {
	f := startTestFarm(t, limitStoreSweep, true)
	dir, url, farm, sw := f.dir, f.url, f.store, f.sweep
	env := []string{"HOME=" + dir}
	other := filepath.Join(dir, "other")
	code, out, errs := msjfarm(t, env, "submit", "--nats-url", url, "--storage", other, "--plugin-trial=false", sw)
	if code != 2 || !strings.Contains(errs, "--storage "+other+" does not exist, so it is not the farm's store: the farm's coordinator ") ||
		!strings.Contains(errs, "storage file://"+farm+") has store ") {
		t.Fatalf("limit search into a store that does not exist: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatalf("the refused limit search made %s (%v)", other, err)
	}
	ost, err := storage.Open(context.Background(), other) // another farm's store
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storage.ID(context.Background(), ost); err != nil {
		t.Fatal(err)
	}
	code, out, errs = msjfarm(t, env, "submit", "--nats-url", url, "--storage", other, "--plugin-trial=false", sw)
	if code != 1 || !strings.Contains(errs, "is not this coordinator's") || !strings.Contains(errs, "(--storage "+other+")") {
		t.Fatalf("limit search into another farm's store: exit %d\n%s%s", code, out, errs)
	}
	if ls, _ := filepath.Glob(filepath.Join(other, "limits", "*")); len(ls) != 0 {
		t.Errorf("the refused limit search wrote %v", ls)
	}
	code, out, errs = msjfarm(t, env, "submit", "--nats-url", url, "--storage", farm, "--plugin-trial=false", sw)
	if code != 0 || !strings.Contains(out, "limits: "+filepath.Join(farm, "limits")) {
		t.Fatalf("limit search into the farm's store: exit %d\n%s%s", code, out, errs)
	}
}

// TestSubmitLimitBeforeTheCoordinator: limit searches submitted before the
// farm's coordinator first starts wait for it with their stores made with
// an identity, as plain submissions do (TestSubmitBeforeTheCoordinator).
// The one given the farm's --storage runs once the coordinator starts on
// it; the one whose --storage was mistyped is refused by the coordinator
// (exit 1) and the store it made is removed. Before, the mistyped one's
// rounds were taken, run into the farm's store and looked for in the
// mistyped one, which stayed behind.
func TestSubmitLimitBeforeTheCoordinator(t *testing.T) {
	dir := t.TempDir()
	url := natstest.StartEmbedded(t)
	sw := filepath.Join(dir, "l.yaml")
	if err := os.WriteFile(sw, []byte(limitStoreSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	farm, typo := filepath.Join(dir, "farm"), filepath.Join(dir, "frm")
	type result struct {
		code     int
		out, err string
	}
	// submit starts the search and returns once it waits for a
	// coordinator (its stderr says so), and the search's outcome.
	submit := func(store string) <-chan result {
		cmd := exec.Command(msjfarmBinary(t), "submit", "--nats-url", url, "--storage", store, "--plugin-trial=false", sw)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		var out strings.Builder
		cmd.Stdout = &out
		pipe, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waiting := make(chan struct{})
		done := make(chan result, 1)
		go func() {
			var errs strings.Builder
			sc := bufio.NewScanner(pipe)
			said := false // each round that waits says it
			for sc.Scan() {
				errs.WriteString(sc.Text() + "\n")
				if !said && strings.Contains(sc.Text(), "no coordinator answers on this NATS system yet") {
					said = true
					close(waiting)
				}
			}
			err := cmd.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			done <- result{code, out.String(), errs.String()}
		}()
		select {
		case <-waiting:
		case r := <-done:
			t.Fatalf("submit --storage %s ended before waiting for a coordinator: exit %d\n%s%s", store, r.code, r.out, r.err)
		case <-time.After(2 * time.Minute):
			t.Fatalf("submit --storage %s not waiting for a coordinator within 2 minutes", store)
		}
		return done
	}
	farmDone, typoDone := submit(farm), submit(typo)
	st, err := storage.Open(context.Background(), farm)
	if err != nil {
		t.Fatal(err)
	}
	runFarm(t, url, st)
	for _, c := range []struct {
		name string
		done <-chan result
	}{{"farm", farmDone}, {"typo", typoDone}} {
		var r result
		select {
		case r = <-c.done:
		case <-time.After(4 * time.Minute): // submit waits 5 minutes for a coordinator
			t.Fatalf("the %s limit search not ended 4 minutes after the coordinator started", c.name)
		}
		switch c.name {
		case "farm":
			if r.code != 0 || !strings.Contains(r.out, "limits: "+filepath.Join(farm, "limits")) {
				t.Errorf("limit search into the farm's store before its coordinator started: exit %d\n%s%s", r.code, r.out, r.err)
			}
		case "typo":
			if r.code != 1 || !strings.Contains(r.err, "is not this coordinator's") ||
				!strings.Contains(r.err, "(--storage "+typo+", which this submission made, is removed again)") {
				t.Errorf("limit search into a mistyped store before the coordinator started: exit %d\n%s%s", r.code, r.out, r.err)
			}
			if _, err := os.Stat(typo); !os.IsNotExist(err) {
				t.Errorf("the refused limit search left %s (%v)", typo, err)
			}
		}
	}
}
