package worker_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// TestForgedTraceTaskNeverOpensPath: task messages whose trace names a
// path on the worker's machine (a secret file, a FIFO that would block a
// reader) and the sha256 of content that is not in storage fail
// permanently with an error naming the hash; the worker never opens the
// path: the records do not quote the secret and the FIFO never blocks.
//
// Complexity 22: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestForgedTraceTaskNeverOpensPath(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "worker-secret.txt")
	if err := os.WriteFile(secret, []byte("TOP-SECRET-LINE\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	paths := []string{secret}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		paths = append(paths, fifo)
	}
	_, nc := natstest.ConnectEmbedded(t)
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if _, err := protocol.Setup(ctx, js, protocol.Layout{MaxDeliver: 2, AckWait: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, p := range paths {
		sum := storage.TraceSHA256([]byte(p)) // content nobody uploaded
		tk := sweep.Task{Point: "p", Scenario: "s", Replication: i, Seed: 1, Policy: "fcfs", Params: map[string]any{},
			Trace: &sweep.TraceRef{SHA256: sum, Size: 16, TimeScale: 1}}
		tk.Workload.Name = "forged"
		tk.Run.Arrivals = 5
		tk.ID = sweep.TaskID(tk)
		data, _ := json.Marshal(protocol.TaskMsg{Campaign: "camp", Task: tk})
		// The forger adds the path the old task format named.
		data = []byte(strings.Replace(string(data), `"trace":{`, `"trace":{"file":"`+p+`",`, 1))
		if !strings.Contains(string(data), p) {
			t.Fatalf("no path in %s", data)
		}
		if _, err := js.Publish(ctx, protocol.TaskSubject("camp", tk.ID), data); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}
	wctx, cancel := context.WithCancel(ctx)
	w, err := worker.New(wctx, worker.Options{Conn: nc, Store: st, Concurrency: 2, FetchWait: 100 * time.Millisecond,
		RetryDelay: 10 * time.Millisecond, Logf: t.Logf, TraceCache: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	for i, id := range ids {
		var data []byte
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if data, err = st.Get(ctx, storage.ResultKey("camp", id)); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("%s: no record after 20 s (blocked on the path?): %v", paths[i], err)
		}
		var r record.Record
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		if !r.Failed() || strings.Contains(string(data), "TOP-SECRET") || !strings.Contains(r.Error, storage.TraceKey(storage.TraceSHA256([]byte(paths[i])))) {
			t.Fatalf("%s: record %s", paths[i], data)
		}
		t.Logf("%s: %s", filepath.Base(paths[i]), r.Error)
	}
	// The worker stores a failed record before it settles the message and
	// counts the failure: wait for the count (a ceiling, not a deadline).
	for end := time.Now().Add(20 * time.Second); w.Stats.Failed.Load() < int64(len(ids)) && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	if w.Stats.Failed.Load() != int64(len(ids)) || w.Stats.Retried.Load() != 0 {
		t.Fatalf("failed %d retried %d: a missing trace is permanent", w.Stats.Failed.Load(), w.Stats.Retried.Load())
	}
}
