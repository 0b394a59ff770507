package main

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/msjfarm/msjfarm/local"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// dryRun prints the plan of camp (local.PlanCampaign) against the storage
// of ff, opened without creating anything, for workers replications at
// once, calibrating third-party policies through plugins. It writes
// nothing.
func dryRun(cmd string, ff *farmFlags, camp *sweep.Campaign, workers int, plugins worker.Runner) int {
	if workers < 1 {
		return usagef("%s: --workers must be >= 1, got %d", cmd, workers)
	}
	ctx, stop := signalContext()
	defer stop()
	var st storage.Store
	where := "no storage given"
	if *ff.storage != "" {
		s, err := storage.Open(ctx, *ff.storage, append(ff.storageOptions(), storage.NoCreate())...)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			where = *ff.storage + " (does not exist yet: nothing stored)"
		case err != nil:
			return fail("%s: %v", cmd, err)
		default:
			st, where = s, s.URL()
		}
	}
	p, err := local.PlanCampaign(ctx, st, camp, workers, plugins)
	if err != nil {
		return fail("%s: dry run: %v", cmd, err)
	}
	// The sweep's warnings were printed as it was planned (planSweep).
	fmt.Printf("campaign %s (%s), dry run: nothing is written\n", p.Campaign, p.Name)
	fmt.Printf("  storage          %s\n", where)
	fmt.Printf("  points           %d\n", p.Points)
	fmt.Printf("  tasks            %d\n", p.Tasks)
	fmt.Printf("  already stored   %d (%d of them reused from other campaigns)\n", p.Stored, p.Reusable)
	fmt.Printf("  to run           %d\n", p.ToRun)
	fmt.Printf("  estimated CPU    %s\n", estimate(p.CPU))
	par := min(p.Workers, p.Cores)
	fmt.Printf("  estimated wall   %s on %d workers (%d cores here: %d at once): tasks %s, start-up and finalisation %s\n", estimate(p.Wall), p.Workers, p.Cores, par, estimate(p.Run), estimate(p.Finalise))
	if p.Calibrated > 0 {
		runs := fmt.Sprintf("%d rates × up to %d arrivals (no more than a task runs)", p.Calibrated, p.CalibrationArrivals)
		if camp.File.Trace != nil { // its own arrivals: no rate, and at most the trace's jobs
			runs = fmt.Sprintf("%d replays of the trace × up to %d arrivals", p.Calibrated, p.CalibrationArrivals)
		}
		fmt.Printf("  calibration      %d cost classes, %s, %s CPU; contention now %.2f× (a thread gets 1/%.2g of a core)\n", p.Classes, runs, round(p.Calibration), p.Contention, p.Contention)
		fmt.Printf("  method           %s\n", local.EstimateMethod)
	}
	if p.Verify > 0 {
		fmt.Printf("  verification     %d of the %d tasks re-run on another worker and compared bit for bit (verify %g): that many more replications, not in the estimates above (a third run for each mismatch)\n", p.Sampled, p.Tasks, p.Verify)
	}
	if p.Precision {
		fmt.Printf("  precision mode: replications are added until the target is met; the numbers above are for the initial %d per point\n", camp.File.Replications)
	}
	return 0
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// estimate is a planned duration as the dry run prints it: rounded, and
// "more than 292 years" past the longest Duration.
func estimate(d time.Duration) string {
	if d == math.MaxInt64 {
		return "more than 292 years"
	}
	return round(d).String()
}
