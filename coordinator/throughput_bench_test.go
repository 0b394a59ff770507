package coordinator_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/cputime"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker"
)

// Environment of BenchmarkThroughput: the campaign's tasks (default 4000),
// the worker processes (default 4) and their slots each (default 16).
const (
	benchCompletionsEnv = "MSJFARM_BENCH_COMPLETIONS"
	benchWorkersEnv     = "MSJFARM_BENCH_WORKERS"
	benchSlotsEnv       = "MSJFARM_BENCH_SLOTS"
	// benchInProcessEnv=1 runs the workers in this process (each with its
	// own NATS connection), so that -cpuprofile sees them; the CPU per
	// completion reported for the coordinator then includes theirs.
	benchInProcessEnv = "MSJFARM_BENCH_INPROCESS"
	// benchBinEnv names a prebuilt msjfarm executable for the worker
	// processes (default: built from this tree), so that two trees'
	// workers can be compared run for run against the same coordinator.
	benchBinEnv = "MSJFARM_BENCH_BIN"
)

// startBenchWorker runs worker i in this process until ctx ends.
func startBenchWorker(ctx context.Context, b *testing.B, url string, st storage.Store, slots, i int) {
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	w, err := worker.New(ctx, worker.Options{Conn: nc, Store: st, Runner: worker.InProcess{}, Concurrency: slots,
		Name: fmt.Sprintf("w%d", i)})
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		_ = w.Run(ctx)
		nc.Close()
	}()
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || x < 1 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return int(x)
}

// BenchmarkThroughput measures the farm's task completions per second on
// short tasks through the real path: a real nats-server (a separate
// process), a local store, this process's coordinator, and worker
// processes (`msjfarm worker --runner inprocess`, built here) with many
// slots, on a campaign of tasks of 10^3 arrivals (one-or-all, FCFS; a few
// milliseconds each). It reports completions/s from the submission to
// the last task's result, the finalisation's seconds, and the CPU per
// completion, counted from the workers' first heartbeats, of the
// coordinator (this process, submission included, until the last result:
// getrusage), of the nats-server and of the workers (/proc/<pid>/stat;
// the workers' is the simulations' and theirs), with the task-state
// writes and the coordinator's messages per completion (which do not
// depend on the machine's load), and
// the finalisation's CPU seconds. Run it alone, once, at least 30 s after
// anything deleted many files on the same file system (another run of it
// included: on ext4 without a journal new files cost more for 30 s after
// a mass deletion, docs/design.md "Throughput"):
//
//	go test -run '^$' -bench Throughput -benchtime 1x ./coordinator/
//
// (MSJFARM_BENCH_COMPLETIONS, MSJFARM_BENCH_WORKERS, MSJFARM_BENCH_SLOTS
// change the campaign and the farm, MSJFARM_BENCH_INPROCESS=1 runs the
// workers in this process for a profile, MSJFARM_BENCH_BIN=path runs
// that msjfarm executable as the workers; it needs MSJFARM_NATS_SERVER.)
func BenchmarkThroughput(b *testing.B) {
	n := envInt(b, benchCompletionsEnv, 4000)
	workers := envInt(b, benchWorkersEnv, 4)
	slots := envInt(b, benchSlotsEnv, 16)
	bin := os.Getenv(benchBinEnv)
	if bin == "" {
		bin = filepath.Join(b.TempDir(), "msjfarm")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/msjfarm/msjfarm/cmd/msjfarm").CombinedOutput(); err != nil {
			b.Fatalf("building msjfarm: %v\n%s", err, out)
		}
	}
	// The sweep of BenchmarkSubmitScale: tasks of 10^3 arrivals.
	f := scaleSweep(b, n)
	n = f.Replications * len(f.Axes["load"])
	for b.Loop() {
		srv := natstest.StartBinary(b)
		nc, err := nats.Connect(srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		dir := b.TempDir()
		st, err := storage.Open(context.Background(), dir)
		if err != nil {
			b.Fatal(err)
		}
		co, err := coordinator.New(context.Background(), coordinator.Options{Conn: nc, Store: st})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- co.Run(ctx) }()
		<-co.Ready()
		// The clocks start once every worker has sent its first heartbeat
		// (Run has begun): a worker's start-up (hashing its executable,
		// 40 ms) is not a completion's cost.
		beats := make(chan *nats.Msg, 64)
		hbSub, err := nc.ChanSubscribe(protocol.HeartbeatWildcard, beats)
		if err != nil {
			b.Fatal(err)
		}
		var pids []int
		for i := range workers {
			if os.Getenv(benchInProcessEnv) == "1" {
				startBenchWorker(ctx, b, srv.URL, st, slots, i)
				continue
			}
			cmd := exec.CommandContext(ctx, bin, "worker", "--nats-url", srv.URL, "--storage", dir,
				"--runner", "inprocess", "--workers", strconv.Itoa(slots), "--worker-name", fmt.Sprintf("w%d", i))
			cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(runtime.NumCPU()))
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = cmd.Wait() }()
			pids = append(pids, cmd.Process.Pid)
		}
		workersCPU := func() (d time.Duration) {
			for _, p := range pids {
				d += procCPU(p)
			}
			return d
		}
		for seen := map[string]bool{}; len(seen) < workers; {
			select {
			case m := <-beats:
				seen[m.Subject] = true
			case <-time.After(5 * time.Minute):
				b.Fatalf("heartbeats from %d of %d workers in 5 minutes", len(seen), workers)
			}
		}
		_ = hbSub.Unsubscribe()
		// Counts that do not depend on the machine's load: the task-state
		// writes (the msjfarm_tasks stream's sequence) and the messages
		// the coordinator's connection received.
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		stateWrites := func() uint64 {
			si, err := js.Stream(context.Background(), "KV_"+protocol.TaskBucket)
			if err != nil {
				b.Fatal(err)
			}
			return si.CachedInfo().State.LastSeq
		}
		// The pull requests the workers make and the acknowledgements they
		// send (acks, naks, +WPI), counted on a connection of their own:
		// how many messages a pull request brings, whatever the load.
		pc, err := nats.Connect(srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		var pulls, acks atomic.Int64
		for subj, c := range map[string]*atomic.Int64{"$JS.API.CONSUMER.MSG.NEXT.>": &pulls, "$JS.ACK.>": &acks} {
			if _, err := pc.Subscribe(subj, func(*nats.Msg) { c.Add(1) }); err != nil {
				b.Fatal(err)
			}
		}
		if err := pc.Flush(); err != nil {
			b.Fatal(err)
		}
		kv0, in0 := stateWrites(), nc.Stats().InMsgs
		pulls0, acks0 := pulls.Load(), acks.Load()
		cpu0, nats0, w0 := selfCPU(), procCPU(srv.PID()), workersCPU()
		var runCPU time.Duration
		start := time.Now()
		r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f})
		if err != nil {
			b.Fatal(err)
		}
		var ran time.Duration
		var kvN, inN uint64
		var pullN, ackN int64
		for {
			s, err := co.Status(context.Background(), r.Campaign)
			if err != nil {
				b.Fatal(err)
			}
			if s.Done+s.Failed >= n && ran == 0 {
				ran = time.Since(start)
				runCPU = selfCPU() - cpu0
				kvN, inN = stateWrites()-kv0, nc.Stats().InMsgs-in0
				pullN, ackN = pulls.Load()-pulls0, acks.Load()-acks0
				if s.Failed > 0 {
					b.Fatalf("%d tasks failed: %v", s.Failed, s.Errors)
				}
			}
			if s.State == protocol.CampaignDone {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		total := time.Since(start)
		cpu, natsCPU, wCPU := selfCPU()-cpu0, procCPU(srv.PID())-nats0, workersCPU()-w0
		b.ReportMetric(float64(n)/ran.Seconds(), "completions/s")
		b.ReportMetric((total - ran).Seconds(), "finalise-s")
		b.ReportMetric(runCPU.Seconds()*1e6/float64(n), "coord-CPU-µs/completion")
		b.ReportMetric((cpu - runCPU).Seconds(), "finalise-CPU-s")
		b.ReportMetric(wCPU.Seconds()*1e6/float64(n), "workers-CPU-µs/completion")
		b.ReportMetric(natsCPU.Seconds()*1e6/float64(n), "nats-CPU-µs/completion")
		b.ReportMetric(float64(n), "tasks")
		b.ReportMetric(float64(kvN)/float64(n), "state-writes/completion")
		b.ReportMetric(float64(inN)/float64(n), "coord-msgs-in/completion")
		b.ReportMetric(float64(pullN)/float64(n), "pulls/completion")
		b.ReportMetric(float64(ackN)/float64(n), "acks/completion")
		// One line a reader can quote (the metrics above are sorted by name).
		b.Logf("%d tasks: %.0f completions/s; CPU per completion: coordinator %.0f µs, nats-server %.0f µs, %d workers %.0f µs (%.0f µs in all: %.0f completions/s on %d idle cores); %.1f completions per pull request; load average %s",
			n, float64(n)/ran.Seconds(), runCPU.Seconds()*1e6/float64(n), natsCPU.Seconds()*1e6/float64(n),
			workers, wCPU.Seconds()*1e6/float64(n), (runCPU+natsCPU+wCPU).Seconds()*1e6/float64(n),
			float64(n)*float64(runtime.NumCPU())/(runCPU+natsCPU+wCPU).Seconds(), runtime.NumCPU(),
			float64(n)/float64(max(pullN, 1)), loadAvg())
		pc.Close()
		cancel()
		if err := <-done; err != nil {
			b.Errorf("coordinator.Run: %v", err)
		}
		nc.Close()
	}
}

// loadAvg is the 1-minute load average ("?" if unknown).
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// selfCPU is this process's user+system CPU time.
func selfCPU() time.Duration {
	d, _ := cputime.Process()
	return d
}

// procCPU is process pid's user+system CPU time (/proc/<pid>/stat, in
// clock ticks of 1/100 s).
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	stt, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(ut+stt) * 10 * time.Millisecond
}
