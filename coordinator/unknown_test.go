package coordinator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
	"github.com/msjfarm/msjfarm/worker"
)

// TestUnknownCampaignsListed: a campaign running when its NATS server's
// state is lost (another, empty server here; the store kept) is listed by
// the next coordinator, with what to do, where it said nothing and status
// listed nothing; submitted again it finishes, each task run once, its
// stored results kept. A finished campaign of the store is not listed.
func TestUnknownCampaignsListed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	co, stop := e.startCoordinatorWith(coordinator.Options{FindUnknown: true})
	var cr countRunner
	_, stopWorker := e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	done := loadSpec(t, "testdata/small.yaml")
	rd, err := co.Submit(ctx, protocol.SubmitRequest{Spec: done})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, co, rd.Campaign, 5*time.Minute)
	running := loadSpec(t, "testdata/small.yaml")
	running.Seed++
	// No worker draws it: the campaign stays running.
	stopWorker()
	rr, err := co.Submit(ctx, protocol.SubmitRequest{Spec: running})
	if err != nil {
		t.Fatal(err)
	}
	stop()

	// The NATS server's state is gone: a new, empty one.
	url, nc := natstest.ConnectEmbedded(t)
	e.url, e.nc = url, nc
	var lines logLines
	co2, _ := e.startCoordinatorWith(coordinator.Options{FindUnknown: true, Logf: func(format string, args ...any) {
		lines.logf(format, args...)
		t.Logf(format, args...)
	}})
	var s *protocol.Status
	for deadline := time.Now().Add(time.Minute); s == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the running campaign is not listed within a minute")
		}
		for _, st := range co2.List() {
			if st.Campaign == rr.Campaign {
				s = &st
			}
		}
	}
	if s.State != protocol.CampaignRunning || !strings.Contains(s.Elsewhere, "unknown to NATS") || !strings.Contains(s.Elsewhere, "submit its sweep again") {
		t.Fatalf("status %+v", s)
	}
	for _, st := range co2.List() {
		if st.Campaign == rd.Campaign {
			t.Fatalf("the finished campaign is listed: %+v", st)
		}
	}
	if got, err := co2.Status(ctx, rr.Campaign); err != nil || got.Elsewhere == "" {
		t.Fatalf("status of the campaign: %+v, %v", got, err)
	}
	if lines.count("campaign "+rr.Campaign+" (farm-small) is running in the store") != 1 {
		t.Fatal("the campaign is not logged once")
	}
	// Submitted again on the new server, it runs and finishes.
	before, _ := cr.total()
	if _, err := co2.Submit(ctx, protocol.SubmitRequest{Spec: running}); err != nil {
		t.Fatal(err)
	}
	e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	fin := waitDone(t, co2, rr.Campaign, 5*time.Minute)
	if fin.State != protocol.CampaignDone || fin.Failed != 0 || fin.Elsewhere != "" {
		t.Fatalf("resubmitted: %+v", fin)
	}
	if n, mx := cr.total(); n-before != fin.Total || mx != 1 {
		t.Fatalf("%d runs after the resubmission (at most %d of one task), want %d and 1", n-before, mx, fin.Total)
	}
}
