package coordinator_test

import (
	"context"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/worker"
)

// TestSubmitPublishesInBackground: a submission whose publication does
// not end within its wait (a 10^7-task campaign within the API request's
// two minutes; here a wait of 0 and a compact campaign published one
// task per window) is answered with the progress so far, and the
// coordinator is stopped right after — somewhere in the middle of the
// publication. The next coordinator resumes the campaign: every one of
// its 6 tasks runs, each exactly once.
func TestSubmitPublishesInBackground(t *testing.T) {
	t.Cleanup(coordinator.SetCompact(2, 1))
	t.Cleanup(coordinator.SetSubmitWait(0))
	e := newEnv(t)
	co, stop := e.startCoordinator(protocol.Layout{})
	f := loadSpec(t, "testdata/small.yaml")
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	// Answered at once, the publication all but certainly still runs;
	// either way the counts add up.
	if r.Tasks != 6 || (r.Publishing == 0 && r.Published != 6) || r.Published+r.Publishing > 6 {
		t.Fatalf("submit answered %+v: want 6 tasks, published + still publishing = 6", r)
	}
	t.Logf("answered with %d published, %d being published", r.Published, r.Publishing)
	stop() // the publication stops where it is
	co2, _ := e.startCoordinator(protocol.Layout{})
	var cr countRunner
	e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	s := waitDone(t, co2, r.Campaign, 5*time.Minute)
	if s.State != protocol.CampaignDone || s.Done != 6 {
		t.Fatalf("status %+v", s)
	}
	if n, mx := cr.total(); n != 6 || mx != 1 {
		t.Fatalf("runs %d (max %d per task), want 6 and 1", n, mx)
	}
}
