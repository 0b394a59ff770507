package pluginhost_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/worker/pluginhost"
)

// A Run call's stream is written by the plugin, and the host holds it to
// what the call asked for (the badproto test plugin answers Run with what
// it may not send). Each violation ends the call at once with ErrWire or
// ErrTraceLimit, not to be retried, and the host goes on. Before:
//   - traceflood, no trace asked: the host kept every chunk, its heap grew
//     by 6.7 GiB in 10 s, and the call ran to its deadline;
//   - traceflood, a trace of at most 10^5 events asked: the same;
//   - progressflood: 10^6 progress reports in 0.8 s, each handed on;
//   - tworesults: the second result replaced the first;
//   - claims: FCFS's result said it preempts and knows sizes, and was
//     stored so (its Info says neither);
//   - times: -1 ns elapsed and 9.2·10⁹ s of CPU were stored.
//
// TestResultThenHang: a plugin that sends its result and then never ends
// the call is stalled, and the error says that the result came (it said
// the policy's code did not return, as for a replication that hangs).
func TestResultThenHang(t *testing.T) {
	h := newHost(t, pluginhost.Config{Sandbox: sandboxOff(t), Stall: 2 * time.Second, Env: []string{"BADPROTO_MODE=resulthang"}})
	_, err := h.Run(context.Background(), pluginhost.Binary{Path: binary("badproto")}, request(t, "fcfs", 2000, 1), pluginhost.RunOptions{Deadline: time.Hour})
	wantKind(t, err, pluginhost.ErrStalled, "the plugin sent its result, then did not end the call for 2s", "killed")
}

// TestStallWithoutBeats: a plugin that does not send the engine loop's
// beats (its Info does not say heartbeat: written without the SDK) is
// watched on its count of arrivals. While the count moves, and after the
// last arrival (a drain the count does not show), the call goes on past
// the stall limit; a count that stops before the last arrival is a stall,
// and so is a call that does not end after its result. Before, such a
// plugin was not watched at all, and its hung call waited for the
// deadline (an hour here; the caller gives up after two minutes, so that
// without the watch this fails rather than waiting it out).
func TestStallWithoutBeats(t *testing.T) {
	const stall = 2 * time.Second
	for _, c := range []struct {
		mode, policy, want string // want: the stall's error, "" for a result
	}{
		{"nobeat", "fcfs", ""},
		{"nobeathang", "fcfs", "count of arrivals simulated made no progress for 2s"},
		{"nobeatresulthang", "fcfs", "the plugin sent its result, then did not end the call for 2s"},
		// 3.2 s of arrivals (and more till the first report), a drain of
		// at most 2000 more of the 2200 (afterShare 0.91): 2 s + 4 × 0.91
		// × ~3.3 s ≈ 14 s after the last arrival.
		{"nobeatdrainhang", "fcfs", "reached the last arrival, and the call then went on for "},
		// A plugin that beats, whose policy is a reference model, which
		// need not run the engine's loop: watched on its count.
		{"refhang", "pooled", "count of arrivals simulated made no progress for 2s"},
		{"", "pooled", ""},
	} {
		t.Run(c.mode+"/"+c.policy, func(t *testing.T) {
			h := newHost(t, pluginhost.Config{Sandbox: sandboxOff(t), Stall: stall, Env: []string{"BADPROTO_MODE=" + c.mode}})
			b := pluginhost.Binary{Path: binary("badproto")}
			beats := c.policy == "pooled"
			if in, err := h.Info(context.Background(), b); err != nil || in.Heartbeat != beats {
				t.Fatalf("Info: %v, heartbeat %v: want %v", err, in != nil && in.Heartbeat, beats)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			t0 := time.Now()
			_, err := h.Run(ctx, b, request(t, c.policy, 2000, 1), pluginhost.RunOptions{Deadline: time.Hour})
			took := time.Since(t0)
			if c.want != "" {
				wantKind(t, err, pluginhost.ErrStalled, c.want, "killed")
				if took > time.Minute {
					t.Errorf("the hung call took %v to fail", took)
				}
				return
			}
			if c.mode == "" {
				if err != nil {
					t.Fatalf("an honest reference model: %v", err)
				}
				return
			}
			// 3.2 s of a moving count, then 3 s at the last arrival:
			// each part longer than the limit.
			if err != nil || took < 6*time.Second {
				t.Fatalf("a plugin whose count moves, then rests at its last arrival: %v after %v; want its result after over 6 s", err, took)
			}
		})
	}
}

func TestPluginStreamRules(t *testing.T) {
	for _, c := range []struct {
		mode  string
		trace bool
		kind  pluginhost.Kind
		want  string
	}{
		{"traceflood", false, pluginhost.ErrWire, "the plugin sent a decision trace, which was not asked for"},
		{"traceflood", true, pluginhost.ErrTraceLimit, "the plugin sent more than the 100000 decision-trace events asked for"},
		{"progressflood", false, pluginhost.ErrWire, "progress reports in"},
		{"tworesults", false, pluginhost.ErrWire, "the plugin sent an update after the replication's result"},
		{"claims", false, pluginhost.ErrWire, `the result says preemption "resume" and size-aware true, the plugin's Info says "none" and false`},
		{"times", false, pluginhost.ErrWire, "the result's times are -1ns elapsed"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			h := newHost(t, pluginhost.Config{Sandbox: sandboxOff(t), MaxConcurrent: 1, Env: []string{"BADPROTO_MODE=" + c.mode}})
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			t0 := time.Now()
			_, err := h.Run(context.Background(), pluginhost.Binary{Path: binary("badproto")}, request(t, "fcfs", 2000, 1),
				pluginhost.RunOptions{Deadline: time.Minute, Trace: c.trace, MaxTraceEvents: 100000})
			var pe *pluginhost.Error
			if !errors.Is(err, c.kind) || !errors.As(err, &pe) || pe.Retryable() || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want %s (%q), not retried; got %v", c.kind, c.want, err)
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			t.Logf("%v, heap +%d MiB: %v", time.Since(t0).Round(time.Millisecond), (int64(after.HeapAlloc)-int64(before.HeapAlloc))>>20, err)
			if _, err := h.Run(context.Background(), pluginhost.Binary{Path: binary("fcfs")}, request(t, "fcfs", 2000, 1), pluginhost.RunOptions{}); err != nil {
				t.Fatalf("an honest replication after: %v", err)
			}
		})
	}
}
