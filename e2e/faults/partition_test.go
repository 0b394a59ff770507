//go:build faults

package faults_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// runPartitionsChild sets up the namespaces and runs the partition faults
// in a copy of this test binary started inside the observer's namespace
// (ip netns exec), so that the test's own connections to NATS and MinIO
// cross the bridge like everyone else's. It returns the child's rows, or
// one SKIP row saying why the partitions cannot run here.
func runPartitionsChild(t *testing.T) []row {
	if why := netnsUnavailable(); why != "" {
		t.Logf("partition faults skipped: %s", why)
		return []row{{Fault: "network partitions", Verdict: "SKIP: " + why, Recovery: "—"}}
	}
	n, err := setupNetns()
	if err != nil {
		t.Fatalf("setting up network namespaces: %v", err)
	}
	defer n.teardown()
	rowsPath := filepath.Join(cfg.outDir, "partition-rows.json")
	_ = os.Remove(rowsPath)
	cmd := exec.Command(ipCmd, "netns", "exec", n.ns["obs"], os.Args[0], "-test.run", "^TestPartitionsChild$", "-test.v",
		"-test.timeout", "60m")
	cmd.Env = append(os.Environ(), envChild+"="+n.prefix, "FAULTS_BIN="+cfg.bin, "FAULTS_PLUGIN_DIR="+cfg.pluginDir,
		"FAULTS_OUT_DIR="+cfg.outDir, "FAULTS_ROWS="+rowsPath)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	runErr := cmd.Run()
	var rows []row
	data, err := os.ReadFile(rowsPath)
	if err == nil {
		err = json.Unmarshal(data, &rows)
	}
	if err != nil {
		t.Fatalf("partition run (%v) left no rows: %v", runErr, err)
	}
	if runErr != nil {
		t.Errorf("partition faults: %v (see the rows)", runErr)
	}
	return rows
}

// TestPartitionsChild is the partition half of TestFaults, run by it in a
// namespace; on its own it skips.
func TestPartitionsChild(t *testing.T) {
	prefix := os.Getenv(envChild)
	if prefix == "" {
		t.Skip("run by TestFaults inside the observer's network namespace")
	}
	n := &netTopology{prefix: prefix, hub: prefix + "-hub", ns: map[string]string{}}
	for role := range hostIPs {
		n.ns[role] = prefix + "-" + role
	}
	var base baseline
	data, err := os.ReadFile(filepath.Join(cfg.outDir, "baseline.json"))
	if err == nil {
		err = json.Unmarshal(data, &base)
	}
	if err != nil {
		t.Fatalf("fault-free baseline: %v", err)
	}
	var rows []row
	t.Cleanup(func() {
		j, _ := json.Marshal(rows)
		if err := os.WriteFile(os.Getenv("FAULTS_ROWS"), j, 0o644); err != nil {
			t.Error(err)
		}
	})
	top := n.topology()
	var relays []*relay
	defer func() {
		for _, r := range relays {
			r.close()
		}
	}()
	faults := []fault{
		{name: fmt.Sprintf("w1 cut off NATS %v", cfg.cutWorker), notes: "nftables drop both ways between w1 and nats-server, mid-task",
			inject: func(t *testing.T, f *farm, id string) window {
				w := mid(t, f, id, "w1")
				if err := n.cut("w1", hostIPs["nats"]); err != nil {
					t.Fatal(err)
				}
				time.Sleep(cfg.cutWorker)
				if err := n.heal("w1"); err != nil {
					t.Fatal(err)
				}
				w.end = time.Now()
				return w
			}},
		{name: "w2 +200 ms RTT, 5% loss", notes: "whole campaign; loss by nftables (5% each way), latency by a relay (+100 ms each way): no netem in this kernel",
			prep: func(f *farm) {
				for _, up := range []struct{ role, url string }{{"nats", ""}, {"minio", ""}} {
					r, err := startRelay(hostIPs["obs"]+":0", fmt.Sprintf("%s:%d", hostIPs[up.role], top.port(up.role)), 100*time.Millisecond)
					if err != nil {
						t.Fatal(err)
					}
					relays = append(relays, r)
					if up.role == "nats" {
						f.workerNATS["w2"] = "nats://" + r.addr()
					} else {
						f.workerStore["w2"] = "s3://msjfarm-faults?secure=false&endpoint=" + r.addr()
					}
				}
				if err := n.loss("w2", 5); err != nil {
					t.Fatal(err)
				}
			},
			inject: func(t *testing.T, f *farm, id string) window {
				return window{start: time.Now(), whole: true, worker: "w2"}
			},
			after: func(f *farm) string {
				d, p, err := n.lossCounters("w2")
				if err != nil {
					return "nft counters: " + err.Error()
				}
				return fmt.Sprintf("nftables dropped %d of %d packets on w2's link (%.1f%%); w2 completed %d tasks", d, d+p, 100*float64(d)/float64(max(d+p, 1)), completedBy(f, "w2"))
			},
			premise: func(f *farm, r row) string {
				if completedBy(f, "w2") == 0 {
					return "w2 completed no task: the slow link carried no result (raise the sweep's arrivals)"
				}
				return ""
			}},
		{name: fmt.Sprintf("coordinator partitioned %v", cfg.coPartition), notes: "nftables drop of everything on the coordinator's link",
			inject: func(t *testing.T, f *farm, id string) window {
				w := mid(t, f, id, "")
				if err := n.cut("co", ""); err != nil {
					t.Fatal(err)
				}
				time.Sleep(cfg.coPartition)
				if err := n.heal("co"); err != nil {
					t.Fatal(err)
				}
				w.end = time.Now()
				return w
			}},
	}
	for _, fl := range faults {
		if !selected(fl.name) && !selected("partitions") {
			continue
		}
		t.Run(fl.name, func(t *testing.T) {
			defer func() {
				for _, role := range []string{"w1", "w2", "co"} {
					_ = n.nft(role, "table inet faults {}\ndelete table inet faults\n")
				}
			}()
			r, _ := runCampaign(t, top, fl, &base)
			rows = append(rows, r)
		})
	}
}

// completedBy is the number of tasks worker completed, from the run log.
func completedBy(f *farm, worker string) int {
	done := 0
	for _, e := range f.runLog.snapshot() {
		if e.kind == "done" && e.worker == worker {
			done++
		}
	}
	return done
}
