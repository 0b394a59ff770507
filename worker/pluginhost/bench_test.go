package pluginhost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"runtime"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/cputime"
	"github.com/msjfarm/msjfarm/internal/sandbox"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
)

// BenchmarkStart measures what a worker pays once per plugin binary:
// process start, go-plugin handshake, gRPC connection and the Info call
// (and, outside the timed part, shutdown).
func BenchmarkStart(b *testing.B) {
	bin := pluginhost.Binary{Path: binary("fcfs")}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		h := pluginhost.New(pluginhost.Config{Logger: quiet})
		t0 := time.Now()
		if _, err := h.Info(context.Background(), bin); err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
		b.StopTimer()
		h.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/start")
}

// BenchmarkCall is the fixed cost of one replication call on a warm
// process: a 100-arrival replication, dominated by the round trip.
func BenchmarkCall(b *testing.B) {
	h := pluginhost.New(pluginhost.Config{Logger: quiet})
	defer h.Close()
	bin := pluginhost.Binary{Path: binary("fcfs")}
	req := request(b, "fcfs", 100, 1)
	if _, err := h.Run(context.Background(), bin, req, pluginhost.RunOptions{}); err != nil {
		b.Fatal(err)
	}
	var inPlugin time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := h.Run(context.Background(), bin, req, pluginhost.RunOptions{})
		if err != nil {
			b.Fatal(err)
		}
		inPlugin += out.PluginElapsed
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds()-inPlugin.Microseconds())/float64(b.N), "µs-overhead/call")
}

// BenchmarkOverhead compares one replication of about a second (FCFS,
// four-class, load 0.5, $MSJFARM_BENCH_ARRIVALS measured arrivals, default
// 8e6: about 1 s of CPU) run in-process (wire.Entry.Run, as the plugin runs it) and through the
// plugin on a warm process, alternating which goes first to cancel drift,
// and checks that both give the same bytes. Reported: seconds per
// replication each way, the plugin's wall-time overhead in percent of the
// in-process time (target: <= 1%; overall and median of the pairs), the
// part of the wall time spent outside the simulation (IPC, JSON,
// scheduling: host time minus the plugin's own elapsed time), and the CPU
// time of the simulating thread each way, which other load on the machine
// distorts far less than wall time.
func BenchmarkOverhead(b *testing.B) {
	arrivals := benchArrivals(b)
	h := pluginhost.New(pluginhost.Config{Logger: quiet, MaxConcurrent: 1})
	defer h.Close()
	bin := pluginhost.Binary{Path: binary("fcfs")}
	req := request(b, "fcfs", arrivals, 11)
	w, err := req.BuildWorkload()
	if err != nil {
		b.Fatal(err)
	}
	spec, err := builtin.Lookup("fcfs")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := h.Info(context.Background(), bin); err != nil { // start outside the timing
		b.Fatal(err)
	}
	var local, remote, inPlugin, localCPU, pluginCPU time.Duration
	inproc := func() []byte {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c0, _ := cputime.Thread()
		t0 := time.Now()
		r, err := spec.Run(w, nil, req.Run.Config())
		local += time.Since(t0)
		c1, _ := cputime.Thread()
		localCPU += c1 - c0
		if err != nil {
			b.Fatal(err)
		}
		out, _ := json.Marshal(r)
		return out
	}
	plugin := func() []byte {
		t0 := time.Now()
		out, err := h.Run(context.Background(), bin, req, pluginhost.RunOptions{})
		remote += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		inPlugin += out.PluginElapsed
		pluginCPU += out.PluginCPU
		return out.ResultJSON
	}
	var ratios []float64 // plugin / in-process wall time, per pair
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var x, y []byte
		l0, r0 := local, remote
		if i%2 == 0 {
			x, y = inproc(), plugin()
		} else {
			y, x = plugin(), inproc()
		}
		if !bytes.Equal(x, y) {
			b.Fatal("plugin and in-process results differ")
		}
		ratios = append(ratios, (remote-r0).Seconds()/(local-l0).Seconds())
	}
	sort.Float64s(ratios)
	n := float64(b.N)
	b.ReportMetric(local.Seconds()/n, "s-inprocess/rep")
	b.ReportMetric(remote.Seconds()/n, "s-plugin/rep")
	b.ReportMetric(100*(remote.Seconds()-local.Seconds())/local.Seconds(), "%-overhead")
	b.ReportMetric(100*(ratios[len(ratios)/2]-1), "%-overhead-median-pair")
	b.ReportMetric(float64((remote-inPlugin).Microseconds())/1000/n, "ms-ipc/rep")
	if localCPU > 0 && pluginCPU > 0 {
		// CPU time of the simulating thread each way: what the plugin
		// costs beyond the IPC, robust to other load on the machine.
		b.ReportMetric(100*(pluginCPU.Seconds()-localCPU.Seconds())/localCPU.Seconds(), "%-cpu-overhead")
		b.ReportMetric(localCPU.Seconds()/n, "s-inprocess-cpu/rep")
		b.ReportMetric(pluginCPU.Seconds()/n, "s-plugin-cpu/rep")
	}
}

// BenchmarkSandboxStart is the sandbox's set-up cost per plugin process:
// each iteration starts the fcfs plugin (exec, handshake, Info) once
// unconfined and once under --plugin-sandbox require, alternating which
// goes first to cancel drift. Reported: ms per start each way and the
// difference (the launcher's re-exec, Landlock, seccomp, rlimits, the
// user switch).
func BenchmarkSandboxStart(b *testing.B) {
	bin := pluginhost.Binary{Path: binary("fcfs")}
	sbs := map[string]*sandbox.Sandbox{"off": sandboxOff(b), "require": requireSandbox(b, "", 0)}
	total := map[string]time.Duration{}
	start := func(mode string) {
		h := pluginhost.New(pluginhost.Config{Logger: quiet, Sandbox: sbs[mode]})
		t0 := time.Now()
		if _, err := h.Info(context.Background(), bin); err != nil {
			b.Fatal(err)
		}
		total[mode] += time.Since(t0)
		b.StopTimer()
		h.Close()
		b.StartTimer()
	}
	alternate(b.N, start)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(total["off"]), "ms/start-off")
	b.ReportMetric(ms(total["require"]), "ms/start-require")
	b.ReportMetric(ms(total["require"]-total["off"]), "ms/sandbox-setup")
}

// BenchmarkSandboxReplication is the sandbox's cost per replication: a
// replication of about a second ($MSJFARM_BENCH_ARRIVALS, default 8e6) on
// a warm confined process and on a warm unconfined one, alternating, with
// identical bytes required. Reported: seconds per replication each way
// (wall and the simulating thread's CPU) and the wall difference in
// percent.
func BenchmarkSandboxReplication(b *testing.B) {
	arrivals := benchArrivals(b)
	bin := pluginhost.Binary{Path: binary("fcfs")}
	req := request(b, "fcfs", arrivals, 11)
	hosts := map[string]*pluginhost.Host{}
	for mode, sb := range map[string]*sandbox.Sandbox{"off": sandboxOff(b), "require": requireSandbox(b, "", 0)} {
		h := pluginhost.New(pluginhost.Config{Logger: quiet, Sandbox: sb, MaxConcurrent: 1})
		defer h.Close()
		if _, err := h.Info(context.Background(), bin); err != nil { // start outside the timing
			b.Fatal(err)
		}
		hosts[mode] = h
	}
	total, cpu := map[string]time.Duration{}, map[string]time.Duration{}
	var want []byte
	run := func(mode string) {
		t0 := time.Now()
		out, err := hosts[mode].Run(context.Background(), bin, req, pluginhost.RunOptions{})
		if err != nil {
			b.Fatal(err)
		}
		total[mode] += time.Since(t0)
		cpu[mode] += out.PluginCPU
		if want == nil {
			want = out.ResultJSON
		} else if !bytes.Equal(want, out.ResultJSON) {
			b.Fatalf("%s: the result differs", mode)
		}
	}
	b.ResetTimer()
	alternate(b.N, run)
	b.ReportMetric(total["off"].Seconds()/float64(b.N), "s/rep-off")
	b.ReportMetric(total["require"].Seconds()/float64(b.N), "s/rep-require")
	b.ReportMetric(100*(total["require"].Seconds()-total["off"].Seconds())/total["off"].Seconds(), "%-sandbox")
	// The simulating thread's CPU time: unlike wall time, not inflated by
	// other load on the machine.
	b.ReportMetric(cpu["off"].Seconds()/float64(b.N), "cpu-s/rep-off")
	b.ReportMetric(cpu["require"].Seconds()/float64(b.N), "cpu-s/rep-require")
}

// alternate calls f n times with "off" and "require", in turn first, so
// that drift in the machine's load affects both alike.
func alternate(n int, f func(mode string)) {
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			f("off")
			f("require")
		} else {
			f("require")
			f("off")
		}
	}
}

// benchArrivals is $MSJFARM_BENCH_ARRIVALS (default 8e6: about 1 s of CPU).
func benchArrivals(b *testing.B) int64 {
	arrivals := int64(8e6)
	if s := os.Getenv("MSJFARM_BENCH_ARRIVALS"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			b.Fatal(err)
		}
		arrivals = int64(f)
	}
	return arrivals
}
