package coordinator_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// TestReconcileFailureShown: a NATS server whose JetStream store is too
// small for a campaign's task messages (max_file_store here; a full disk
// or an account's limit on a real farm) refuses most of them. The
// campaign stayed "running", 0 queued, and only the coordinator's log
// said why. Now its status says (Reconciling), counting the failures in
// a row; a worker that drains the stream makes room, each reconcile
// publishes more, and the campaign finishes with every task run once and
// the status clear.
func TestReconcileFailureShown(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoSigs: true, NoLog: true, JetStreamMaxStore: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(func() { protocol.StopEmbedded(srv) })
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	st, err := storage.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, url: srv.ClientURL(), nc: nc, store: st}
	co, _ := e.startCoordinatorWith(coordinator.Options{})
	var rates []string
	for i := range 600 {
		rates = append(rates, strconv.FormatFloat(0.1+0.5*float64(i)/600, 'g', -1, 64))
	}
	f, err := sweep.Parse([]byte("name: full\nworkload: one-or-all\naxes:\n  arrival_rate: ["+strings.Join(rates, ", ")+"]\npolicies: [fcfs]\nreplications: 4\nrun: {arrivals: 200}\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: f})
	t.Logf("submit: %+v, %v", r, err)
	list := co.List()
	if len(list) != 1 {
		t.Fatalf("campaigns %+v", list)
	}
	id := list[0].Campaign
	var s *protocol.Status
	for deadline := time.Now().Add(2 * time.Minute); ; {
		s, err = co.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(s.Reconciling, "times in a row") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("status: %+v", s)
	if !strings.Contains(s.Reconciling, "failed") {
		t.Fatalf("status says nothing of the refused messages: %+v", s)
	}
	var cr countRunner
	e.startWorker(worker.Options{Concurrency: 2, Name: "w1", Runner: &cr})
	s = waitDone(t, co, id, 5*time.Minute)
	if s.State != protocol.CampaignDone || s.Done != 2400 || s.Reconciling != "" {
		t.Fatalf("status %+v", s)
	}
	if n, mx := cr.total(); n != 2400 || mx != 1 {
		t.Fatalf("runs: %d total, max %d per task; want 2400 and 1", n, mx)
	}
}
