package main

import (
	"github.com/msjfarm/msjfarm/internal/redact"

	"github.com/spf13/pflag"

	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/msjfarm/msjfarm/monitor"
	"github.com/msjfarm/msjfarm/worker"
)

// monitorFlags are the observability flags (package monitor): the HTTP
// address of the live page or of the metrics, and the log format.
type monitorFlags struct {
	httpName  string
	http      *string
	logFormat *string
}

// addMonitorFlags adds -<httpName> ADDR ("http": live page, /metrics and
// health; "metrics": /metrics and health only) and --log-format.
func addMonitorFlags(fs *pflag.FlagSet, httpName, usage string) *monitorFlags {
	return &monitorFlags{httpName: httpName,
		http:      fs.String(httpName, "", usage),
		logFormat: fs.String("log-format", "text", "log lines as text (key=value) or json")}
}

// check refuses an --http value that is not host:port (a dry run, which
// opens nothing, said nothing of it).
func (m *monitorFlags) check() error {
	if *m.http == "" {
		return nil
	}
	return monitor.CheckAddr("--"+m.httpName, *m.http)
}

// listen opens the HTTP address, nil without one; an invalid or busy
// address is an error naming the flag.
func (m *monitorFlags) listen() (net.Listener, error) {
	if *m.http == "" {
		return nil, nil
	}
	return monitor.Listen("--"+m.httpName, *m.http)
}

// logger is the command's structured logger on stderr (verbose: Debug
// level, which includes the workers' task start and finish lines).
func (m *monitorFlags) logger(verbose bool) (*slog.Logger, error) {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	// Redacted: a line may quote a URL or an error with credentials.
	return monitor.NewLogger(redact.Writer(os.Stderr, processSecrets...), "--log-format", *m.logFormat, level)
}

// logf is the printf-style logger for Options.Logf: l's Info lines when
// verbose, nothing otherwise.
func logf(l *slog.Logger, verbose bool) func(string, ...any) {
	if !verbose || l == nil {
		return nil
	}
	return monitor.Logf(l)
}

// pluginStarts exports the plugin host's process starts when the runner
// runs plugins.
func pluginStarts(m *monitor.Metrics, r worker.Runner) {
	if pr, ok := r.(*worker.PluginRunner); ok {
		m.PluginStarts(pr.Host)
	}
}

func httpURLLine(cmd string, ln net.Listener, what string) {
	fmt.Fprintf(stderr, "msjfarm %s: %s on %s\n", cmd, what, monitor.URL(ln))
}

// taskLogger is the logger of msjfarm run's task lines: only when
// verbose, so that retries do not break the progress line.
func taskLogger(l *slog.Logger, verbose bool) *slog.Logger {
	if !verbose {
		return nil
	}
	return l
}

// runProbe is a health check for images without curl or wget (the
// compose file's healthcheck): GET the URL, exit 0 on a 2xx answer.
func defProbe(fs *pflag.FlagSet) func([]string) int {
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	return func(args []string) int {
		if fs.NArg() != 1 || !strings.HasPrefix(fs.Arg(0), "http://") && !strings.HasPrefix(fs.Arg(0), "https://") {
			return usagef("probe: want one http:// URL, e.g. msjfarm probe http://localhost:8080/readyz")
		}
		if *timeout <= 0 {
			// http.Client takes 0 for no limit: a health check that
			// never gave up on a server that accepted and said nothing.
			return usagef("probe: --timeout must be > 0, got %s", *timeout)
		}
		c := &http.Client{Timeout: *timeout}
		resp, err := c.Get(fs.Arg(0))
		if err != nil {
			return fail("probe: %v", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		fmt.Print(string(body))
		if resp.StatusCode/100 != 2 {
			return fail("probe: %s: %s", fs.Arg(0), resp.Status)
		}
		return 0
	}
}
