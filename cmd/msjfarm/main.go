// Command msjfarm simulates multiserver-job scheduling policies: one
// scenario locally (simulate), and — as the farm grows — whole sweeps.
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// commands maps a subcommand to its implementation; each returns the exit
// code after printing its own errors.
var commands = map[string]struct {
	run  func(args []string) int
	help string
}{
	"simulate":    {runSimulate, "simulate one scenario locally and print its statistics"},
	"policies":    {runPolicies, "list the built-in policies and their parameters"},
	"workloads":   {runWorkloads, "list the named workloads"},
	"run":         {runRun, "run a sweep file locally: embedded NATS, coordinator and workers in one process"},
	"coordinator": {runCoordinator, "serve campaigns: JetStream layout, task tracking, summaries (embedded NATS without -nats-url)"},
	"worker":      {runWorker, "pull tasks from NATS and run them (-workers N at once)"},
	"submit":      {runSubmit, "submit (or resume) a sweep file to a coordinator"},
	"status":      {runStatus, "show a campaign's progress (id or name; all campaigns without one; without -nats-url, those in -storage)"},
	"cancel":      {runCancel, "cancel a campaign (its results so far are kept)"},
	"results":     {runResults, "print a campaign's summary table from storage (id or name; without one, list the campaigns)"},
	"report":      {runReport, "(re)generate a campaign's HTML report from storage into a local directory"},
	"reproduce":   {runReproduce, "re-run archived tasks of a campaign and check the results are bit-identical"},
	"gc":          {runGC, "list the stored results no campaign refers to (-delete removes them)"},
	"plugin":      {runPlugin, "list, describe and conformance-check policy plugin binaries"},
	"analyze":     {runAnalyze, "evaluate an analytical model: msfq (Quickswap §5 mean response time approximation)"},
	"probe":       {runProbe, "GET a health URL (/healthz, /readyz) and exit 0 if it answers 2xx: container health checks without curl"},
}

func main() {
	os.Exit(dispatch(os.Args[1:]))
}

func dispatch(args []string) int {
	if len(args) == 2 && args[0] == registry.ServeSubcommand {
		// Hidden: msjfarm re-executed by its own plugin host to serve a
		// built-in family as a plugin (worker/registry.Self).
		if err := builtin.ServeFamily(args[1]); err != nil {
			return fail("%v", err)
		}
		return 0
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage()
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "msjfarm: unknown command %q\n\n", args[0])
		usage()
		return 2
	}
	return c.run(args[1:])
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: msjfarm <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, commands[n].help)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'msjfarm <command> -h' for a command's flags.")
}

func fail(format string, a ...any) int {
	fmt.Fprintf(os.Stderr, "msjfarm: "+strings.TrimSuffix(format, "\n")+"\n", a...)
	return 1
}
