package pluginhost_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/msjfarm/msjfarm/internal/procutil"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
)

// A plugin process the host kills itself (here: a cancelled replication,
// whose process is replaced) exits without an error in the host's log:
// every Ctrl-C of a run printed "[ERROR] … plugin process exited …
// signal: killed". A process that dies on its own is still an error.
func TestPluginExitLogLevel(t *testing.T) {
	var log procutil.Buffer // the plugins' goroutines log into it too
	h := newHost(t, pluginhost.Config{Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &log})})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	_, err := h.Run(ctx, pluginhost.Binary{Path: binary("crashy")}, request(t, "slow", 1e6, 1), pluginhost.RunOptions{})
	if !errors.Is(err, pluginhost.ErrCanceled) {
		t.Fatalf("want a cancellation, got %v", err)
	}
	req := request(t, "crash", 5000, 1)
	req.Params = map[string]any{"after": 100}
	if _, err := h.Run(context.Background(), pluginhost.Binary{Path: binary("crashy")}, req, pluginhost.RunOptions{}); !errors.Is(err, pluginhost.ErrCrash) {
		t.Fatalf("want a crash, got %v", err)
	}
	h.Close()
	var exits, errs int
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "plugin process exited") {
			exits++
			if strings.Contains(l, "[ERROR]") {
				errs++
			}
		}
	}
	if exits == 0 || errs != 1 {
		t.Errorf("want the crash's exit alone logged as an error (%d exits, %d errors):\n%s", exits, errs, log.String())
	}
}
