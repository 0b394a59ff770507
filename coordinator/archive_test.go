package coordinator_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

type noCatalog struct{}

func (noCatalog) Schema(string) ([]sim.Param, error) { return nil, errors.New("no policies here") }

// TestLoadArchive: the archive of a finished precision campaign has every
// task (added replications included) and summarises to the very bytes of
// the coordinator's summary.csv and report; without a catalogue that knows
// the policies it falls back to the records in manifest order.
func TestLoadArchive(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	e.startWorker(worker.Options{Concurrency: 4, Runner: synthFn(synth)})
	f, err := sweep.Parse([]byte(precisionSweep), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, co, r.Campaign, 5*time.Minute)
	want, err := e.store.Get(ctx, storage.SummaryKey(r.Campaign))
	if err != nil {
		t.Fatal(err)
	}
	for _, cat := range []sweep.Catalog{builtin.Catalog{}, noCatalog{}} {
		a, err := archive.Load(ctx, e.store, r.Campaign, cat)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Tasks) != 105 || len(a.Records) != 105 || a.Manifest == nil || a.Manifest.Precision == nil {
			t.Fatalf("%T: %d tasks, %d records", cat, len(a.Tasks), len(a.Records))
		}
		if _, fallback := cat.(noCatalog); fallback != (len(a.Warnings) == 1) {
			t.Fatalf("%T: warnings %v", cat, a.Warnings)
		}
		var buf bytes.Buffer
		if err := aggregate.WriteCSV(&buf, a.Points()); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("%T: archive summary differs:\n%s\nstored:\n%s", cat, buf.Bytes(), want)
		}
		files, err := a.Report()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"index.html", "precision.csv", "summary.csv"} {
			stored, err := e.store.Get(ctx, storage.ReportPrefix(r.Campaign)+n)
			if err != nil || !bytes.Equal(stored, files[n]) {
				t.Fatalf("%T: report file %s differs from the stored one (%v)", cat, n, err)
			}
		}
	}
	if _, err := archive.Load(ctx, e.store, "nosuchcampaign", builtin.Catalog{}); err == nil {
		t.Fatal("unknown campaign: no error")
	}
}
