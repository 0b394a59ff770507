package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/msjfarm/msjfarm/internal/protocol"
)

// TestStatusFromStorageCountsFailures: `status --storage` (no farm) of a
// finished campaign whose every task failed says so. It counted every
// result entry, failures too, as done: "done  DONE 4  FAILED 0", and an
// operator checking a run from another terminal read it as a success.
func TestStatusFromStorageCountsFailures(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "fail.yaml")
	// Each replication of 1e8 arrivals passes its 1 ms deadline: all 4
	// tasks fail.
	body := "name: allfail\nworkload: one-or-all\naxes: {arrival_rate: [1, 2]}\npolicies: [fcfs]\nreplications: 2\nrun: {arrivals: 1e8, warmup: 1e3, deadline: 1ms}\n"
	if err := os.WriteFile(sw, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if code, out, errs := captured(t, func() int { return dispatch([]string{"run", "-q", "--storage", data, sw}) }); code != 1 {
		t.Fatalf("run: exit %d, want 1 (every task failed)\n%s%s", code, out, errs)
	}
	code, out, errs := captured(t, func() int { return dispatch([]string{"status", "--storage", data, "--json", "allfail"}) })
	var list []protocol.Status
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 {
		t.Fatalf("status: exit %d\n%s%s", code, out, errs)
	}
	if s := list[0]; s.State != protocol.CampaignDone || s.Total != 4 || s.Done != 0 || s.Failed != 4 {
		t.Fatalf("status %+v, want done with 0 done and 4 failed of 4", s)
	}
}
