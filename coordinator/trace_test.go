package coordinator_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// TestForgedTraceSubmitRefused: raw submit requests naming a trace by a
// path on the coordinator's machine (a secret file, a FIFO that would
// block a reader, /dev/zero that would exhaust memory) are refused naming
// trace.sha256, without the path being opened: the reply does not quote
// the secret, the FIFO does not block, nothing is written. A sha256 with
// no uploaded object, or another size, is refused too; the uploaded trace
// is accepted.
//
// Complexity 22: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestForgedTraceSubmitRefused(t *testing.T) {
	e := newEnv(t)
	e.startCoordinator(protocol.Layout{})
	dir := t.TempDir()
	secret := filepath.Join(dir, "worker-secret.txt")
	if err := os.WriteFile(secret, []byte("TOP-SECRET-LINE\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	paths := []string{secret, "/dev/zero"}
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		paths = append(paths, fifo)
	}
	submit := func(trace string) protocol.SubmitReply {
		t.Helper()
		raw := `{"spec": {"name": "forged", "seed": 1, "trace": ` + trace + `, "policies": ["fcfs"], "replications": 1, "run": {"arrivals": 5}}}`
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		msg, err := e.nc.RequestWithContext(ctx, protocol.APISubmit, []byte(raw))
		if err != nil {
			t.Fatalf("%s: %v (the coordinator did not answer: blocked on the path?)", trace, err)
		}
		var rep protocol.SubmitReply
		if err := json.Unmarshal(msg.Data, &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	for _, p := range paths {
		rep := submit(`{"file": "` + p + `"}`)
		if !strings.Contains(rep.Error, "trace.sha256: missing") || strings.Contains(rep.Error, "TOP-SECRET") || rep.Campaign != "" {
			t.Fatalf("%s: reply %+v", p, rep)
		}
	}
	data, err := os.ReadFile("../model/swf/testdata/small.swf")
	if err != nil {
		t.Fatal(err)
	}
	sum := storage.TraceSHA256(data)
	ref := func(size int) string {
		b, _ := json.Marshal(map[string]any{"file": secret, "sha256": sum, "size": size})
		return string(b)
	}
	if rep := submit(ref(len(data))); !strings.Contains(rep.Error, "trace.sha256") || !strings.Contains(rep.Error, "has no object traces/"+sum) {
		t.Fatalf("not uploaded: reply %+v", rep)
	}
	keys, err := objectsWritten(e.store)
	if err != nil || len(keys) != 0 {
		t.Fatalf("refused submits wrote %q (%v)", keys, err)
	}
	if _, _, err := storage.PutTrace(context.Background(), e.store, data); err != nil {
		t.Fatal(err)
	}
	if rep := submit(ref(len(data) + 1)); !strings.Contains(rep.Error, "trace.sha256") || !strings.Contains(rep.Error, "the sweep says") {
		t.Fatalf("wrong size: reply %+v", rep)
	}
	rep := submit(ref(len(data)))
	if rep.Error != "" || rep.Tasks != 1 {
		t.Fatalf("uploaded trace: reply %+v", rep)
	}
	spec, err := e.store.Get(context.Background(), storage.CampaignSpecKey(rep.Campaign))
	if err != nil || strings.Contains(string(spec), secret) || !strings.Contains(string(spec), sum) {
		t.Fatalf("stored spec (%v):\n%s", err, spec)
	}
}

// traceTries counts the policy variants a catalogue is asked to try on a
// replayed trace's workload.
type traceTries struct {
	builtin.Catalog
	tries *atomic.Int64
}

func (c traceTries) CheckWorkload(policy string, params map[string]any, w *sim.Workload) error {
	if len(w.Trace) > 0 {
		c.tries.Add(1)
	}
	return c.Catalog.CheckWorkload(policy, params, w)
}

// TestEmbeddedCoordinatorLeavesTheTrace: a coordinator handed the very
// File its submitter planned, with the trace content read on that
// machine (`msjfarm run` embeds one), plans it as the farm has it: it
// does not parse the trace to try the policies on it again, as a
// coordinator of `msjfarm submit` never sees it. It parsed it once per
// servers value (a 5·10⁶-job trace: 88 bytes a job each time, on top of
// the planning's own parses) and kept the content with the campaign.
// The submitter's File keeps it.
func TestEmbeddedCoordinatorLeavesTheTrace(t *testing.T) {
	e := newEnv(t)
	var tries atomic.Int64
	co, _ := e.startCoordinatorWith(coordinator.Options{Catalog: traceTries{tries: &tries}})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.swf"), []byte("; MaxProcs: 8\n1 0 -1 10 2\n2 5 -1 20 8\n3 9 -1 5 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte("name: tr\nseed: 1\ntrace: {file: t.swf}\naxes: {servers: [4, 8]}\npolicies: [fcfs, first-fit]\nreplications: 1\nrun: {arrivals: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := sweep.Load(sw)
	if err != nil {
		t.Fatal(err)
	}
	data, err := sweep.ReadTraceFile(f, 0)
	if err != nil {
		t.Fatal(err)
	}
	// What the submitter does: its plan tries the trace (2 systems × 2
	// policies), then it uploads the trace and submits.
	if _, err := sweep.Plan(f, traceTries{tries: &tries}); err != nil || tries.Load() != 4 {
		t.Fatalf("the submitter's plan tried %d variants on the trace (%v); want 4", tries.Load(), err)
	}
	if _, _, err := storage.PutTrace(t.Context(), e.store, data); err != nil {
		t.Fatal(err)
	}
	tries.Store(0)
	rep, err := co.Submit(t.Context(), protocol.SubmitRequest{Spec: f})
	if err != nil || rep.Tasks != 4 {
		t.Fatalf("submit: %+v, %v", rep, err)
	}
	if n := tries.Load(); n != 0 {
		t.Fatalf("the coordinator tried %d policy variants on the trace: it parsed the submitter's copy of it", n)
	}
	if _, err := sweep.Plan(f, traceTries{tries: &tries}); err != nil || tries.Load() != 4 {
		t.Fatalf("the submitter's File lost its trace: its plan tried %d variants on it (%v)", tries.Load(), err)
	}
}
