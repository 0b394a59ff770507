package coordinator_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
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
