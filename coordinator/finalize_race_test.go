package coordinator_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker"
)

// gateStore blocks the first Put of a report file until release is closed,
// holding a finalisation in the middle of writing its report.
type gateStore struct {
	storage.Store
	once    sync.Once
	blocked chan struct{} // closed when a report Put is blocked
	release chan struct{}
}

func (g *gateStore) Put(ctx context.Context, key string, data []byte) error {
	if strings.Contains(key, "/report/") {
		first := false
		g.once.Do(func() { first = true })
		if first {
			close(g.blocked)
			<-g.release
		}
	}
	return g.Store.Put(ctx, key, data)
}

// TestResubmitDuringFinalize: a campaign submitted again while its
// finalisation is writing the report must not be reset under it: the
// resubmission waits for the finalisation, then the campaign ends done.
// Before the fix, Submit returned at once having set the state back to
// running and cleared finalizing, so the finalisation in flight closed a
// campaign marked running (Wait could return a running campaign with
// every task done until the next reconcile finalised it again) and a
// second finalisation could overlap the first.
func TestResubmitDuringFinalize(t *testing.T) {
	e := newEnv(t)
	g := &gateStore{Store: e.store, blocked: make(chan struct{}), release: make(chan struct{})}
	co, err := coordinator.New(context.Background(), coordinator.Options{Conn: e.nc, Store: g,
		Reconcile: 500 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- co.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-co.Ready()
	e.startWorker(worker.Options{Concurrency: 2})
	f := loadSpec(t, "testdata/small.yaml")
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.blocked:
	case <-time.After(2 * time.Minute):
		t.Fatal("the finalisation never wrote a report")
	}
	resubmitted := make(chan error, 1)
	go func() {
		_, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f})
		resubmitted <- err
	}()
	// The resubmission waits for the finalisation (it cannot be observed
	// not to return, so give it time to do the damage it used to do).
	select {
	case err := <-resubmitted:
		t.Fatalf("resubmission returned during the finalisation (err %v)", err)
	case <-time.After(time.Second):
	}
	close(g.release)
	if err := <-resubmitted; err != nil {
		t.Fatal(err)
	}
	s := waitDone(t, co, r.Campaign, 5*time.Minute)
	if s.State != protocol.CampaignDone || s.Done != 6 || s.Finished.IsZero() {
		t.Fatalf("status after the resubmission %+v", s)
	}
}
