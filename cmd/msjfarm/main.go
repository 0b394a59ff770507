// Command msjfarm simulates multiserver-job scheduling policies: one
// scenario locally (simulate), and — as the farm grows — whole sweeps.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/msjfarm/msjfarm/internal/gcpace"
	"github.com/msjfarm/msjfarm/internal/redact"
	"github.com/msjfarm/msjfarm/internal/sandbox"
	"github.com/msjfarm/msjfarm/internal/scratch"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// A command is one msjfarm subcommand. def defines its flags on fs and
// returns the function that runs it once cobra has parsed them; that
// function prints its own errors and returns the exit code.
type command struct {
	use     string // synopsis: name and arguments
	short   string
	long    string // optional: more than short
	example string
	env     bool // flags also come from MSJFARM_* and --config (farmFlags)
	def     func(fs *pflag.FlagSet) func(args []string) int
	subs    []command
}

// envNote closes the help of the commands that read farmFlags.
const envNote = `Every flag can also be set in the environment as MSJFARM_<FLAG> (upper case,
dashes as underscores: MSJFARM_NATS_URL, MSJFARM_STORAGE, MSJFARM_WORKERS, ...)
or in a YAML/TOML/JSON config file (--config or MSJFARM_CONFIG; keys are the
flag names, e.g. "nats-url: nats://nats:4222"). The command line wins over
the environment, which wins over the file. Put secrets (MSJFARM_NATS_TOKEN,
MSJFARM_NATS_PASSWORD, MSJFARM_S3_SECRET_KEY) in the environment or the file:
the command line is visible to other users; msjfarm never prints them. A set
MSJFARM_ variable that msjfarm does not read (a misspelling) is warned of.`

func noArgs(name string, f func(args []string) int) func(*pflag.FlagSet) func([]string) int {
	return func(*pflag.FlagSet) func([]string) int {
		return func(args []string) int {
			if len(args) > 0 {
				return usagef("%s: takes no arguments", name)
			}
			return f(args)
		}
	}
}

var commands = []command{
	{use: "simulate [flags]", short: "simulate one scenario locally and print its statistics",
		example: "  msjfarm simulate --workload one-or-all --policy msfq --param threshold=31 --rate 7.5 --reps 5\n  msjfarm simulate --swf trace.swf --policy fcfs --json",
		def:     defSimulate},
	{use: "limit [flags] [SWEEP.yaml]", short: "find each policy's saturation arrival rate λ_max by a bisection on the pooled stability verdict",
		long: "Find a policy's stability limit λ_max on a workload: the largest arrival rate it\n" +
			"sustains. --lo is evaluated first (unstable there: unstable at the lowest rate,\n" +
			"and --hi is not run), then --hi (stable there: no limit in range), then the\n" +
			"geometric midpoint until hi/lo − 1 ≤ --rel-tol. Each rate runs --reps\n" +
			"replications, pooled by majority (sim.Pool); replication r has the same seed at\n" +
			"every rate. Either --workload/--policy/--param, or a sweep file: its workload, its\n" +
			"run block and every policy variant (its arrival-rate axis is ignored). The default\n" +
			"bracket is [0.05, 1.5] × the rate at load 1. The default --rel-tol is the growth\n" +
			"test's resolution at --arrivals (2.25% at 10^6; four times the arrivals halve it):\n" +
			"a smaller one narrows the bracket, not the error, and is warned about.",
		example: "  msjfarm limit --workload one-or-all --policy fcfs\n  msjfarm limit --policy msfq --param threshold=31 --lo 5 --hi 9 --arrivals 2e5 --reps 3 --rel-tol 0.05\n  msjfarm limit examples/q-fig3.yaml --json",
		def:     defLimit},
	{use: "policies", short: "list the built-in policies and their parameters",
		example: "  msjfarm policies", def: noArgs("policies", runPolicies)},
	{use: "workloads", short: "list the named workloads",
		example: "  msjfarm workloads", def: noArgs("workloads", runWorkloads)},
	{use: "run [flags] SWEEP.yaml", short: "run a sweep file locally: embedded NATS, coordinator and workers in one process",
		long:    "Run a sweep file locally: embedded NATS, coordinator and workers in one\nprocess, results in --storage. Running the same command again resumes.",
		example: "  msjfarm run examples/q-fig3.yaml\n  msjfarm run examples/q-fig3.yaml --workers 2 --storage /tmp/data --http 127.0.0.1:8080\n  msjfarm run --dry-run --profile paper examples/q-fig3.yaml",
		env:     true, def: defRun},
	{use: "coordinator [flags]", short: "serve campaigns: JetStream layout, task tracking, summaries (embedded NATS without --nats-url)",
		example: "  msjfarm coordinator --listen 0.0.0.0:4222 --storage 's3://msjfarm?endpoint=minio:9000&secure=false' --http :8080",
		env:     true, def: defCoordinator},
	{use: "worker [flags]", short: "pull tasks from NATS and run them (--workers N at once)",
		example: "  msjfarm worker --nats-url nats://coordinator:4222 --workers 8 --storage 's3://msjfarm?endpoint=minio:9000&secure=false'",
		env:     true, def: defWorker},
	{use: "submit [flags] SWEEP.yaml", short: "submit (or resume) a sweep file to a coordinator",
		example: "  msjfarm submit --nats-url nats://coordinator:4222 --wait examples/q-fig3.yaml\n  msjfarm submit --dry-run --workers 64 --storage 's3://msjfarm?endpoint=minio:9000&secure=false' examples/q-fig3.yaml",
		env:     true, def: defSubmit},
	{use: "status [flags] [CAMPAIGN]", short: "show a campaign's progress (id or name; all campaigns without one; without --nats-url, those in --storage)",
		example: "  msjfarm status --nats-url nats://coordinator:4222\n  msjfarm status --storage ./msjfarm-data q-fig3",
		env:     true, def: defStatus},
	{use: "cancel [flags] CAMPAIGN", short: "cancel a campaign (its results so far are kept)",
		example: "  msjfarm cancel --nats-url nats://coordinator:4222 q-fig3",
		env:     true, def: defCancel},
	{use: "results [flags] [CAMPAIGN]", short: "print a campaign's summary table from storage (id or name; without one, list the campaigns)",
		example: "  msjfarm results\n  msjfarm results q-fig3 --csv > summary.csv\n  msjfarm results q-fig3 --compare msfq,fcfs",
		env:     true, def: defResults},
	{use: "report [flags] CAMPAIGN [CAMPAIGN...]", short: "(re)generate a campaign's HTML report from storage into a local directory",
		example: "  msjfarm report q-fig3 --out /tmp/report",
		env:     true, def: defReport},
	{use: "reproduce [flags] CAMPAIGN", short: "re-run archived tasks of a campaign and check the results are bit-identical",
		example: "  msjfarm reproduce q-fig3\n  msjfarm reproduce q-fig3 --all --workers 4",
		env:     true, def: defReproduce},
	{use: "gc [flags]", short: "list the stored results no campaign refers to (--delete removes them)",
		example: "  msjfarm gc --storage ./msjfarm-data\n  msjfarm gc --delete --min-age 24h",
		env:     true, def: defGC},
	{use: "plugin COMMAND", short: "list, describe and conformance-check policy plugin binaries",
		long: "List, describe and conformance-check policy plugin binaries.\n\n" +
			"BINARY is a path, a binary name (msjfarm-policy-fcfs) or a family (fcfs); a name\n" +
			"or family is looked up on the search path: --plugin-path, then\n" +
			"$MSJFARM_PLUGIN_PATH (colon-separated), then the directory of the msjfarm\n" +
			"executable and its plugins/ subdirectory. make plugins builds the project's own\n" +
			"plugin binaries into bin/plugins/, where bin/msjfarm (make build) finds them; a\n" +
			"plain go build of msjfarm builds none.",
		example: "  msjfarm plugin list\n  msjfarm plugin info fcfs    # looks up msjfarm-policy-fcfs on the search path (make plugins)\n  msjfarm plugin check ./msjfarm-policy-mine",
		subs: []command{
			{use: "list [flags]", short: "find plugin binaries (msjfarm-policy-*) on the search path and describe each",
				example: "  msjfarm plugin list --plugin-path ./plugins", def: defPluginList},
			{use: "info [flags] BINARY", short: "a plugin's name, versions, checksum and policies with their capabilities and parameters",
				example: "  msjfarm plugin info fcfs --json    # looks up msjfarm-policy-fcfs on the search path (make plugins)", def: defPluginInfo},
			{use: "check [flags] BINARY", short: "run the conformance suite on a plugin (exit status 1 if a check fails)",
				example: "  msjfarm plugin check ./msjfarm-policy-mine --v", def: defPluginCheck},
		}},
	{use: "analyze MODEL", short: "evaluate an analytical model: msfq (Quickswap §5 mean response time approximation)",
		example: "  msjfarm analyze msfq --k 32 --rates 2,4,6,7",
		subs: []command{
			{use: "msfq [flags]", short: "Quickswap §5 approximation of MSFQ's mean response time",
				example: "  msjfarm analyze msfq --rate 7.5\n  msjfarm analyze msfq --k 32 --threshold 31 --rates 2,4,6,7 --json",
				def:     func(fs *pflag.FlagSet) func([]string) int { return defMSFQ(fs, os.Stdout) }},
		}},
	{use: "probe [flags] URL", short: "GET a health URL (/healthz, /readyz) and exit 0 if it answers 2xx: container health checks without curl",
		example: "  msjfarm probe http://localhost:8080/readyz", def: defProbe},
}

func main() {
	gcpace.Apply()
	code := dispatch(os.Args[1:])
	scratch.Close()
	os.Exit(code)
}

// usageError marks errors of the command line (exit status 2).
type usageError struct{ error }

// dispatch runs the command line args and returns the exit status: 0 ok,
// 1 the run failed, 2 a usage or validation error, 130 interrupted by
// SIGINT, 143 by SIGTERM (interruptStatus).
func dispatch(args []string) int {
	if len(args) == 2 && args[0] == registry.ServeSubcommand {
		// Hidden: msjfarm re-executed by its own plugin host to serve a
		// built-in family as a plugin (worker/registry.Self).
		if err := builtin.ServeFamily(args[1]); err != nil {
			return fail("%v", err)
		}
		return 0
	}
	// No process of this user reads our environment or memory (a plugin
	// run unconfined, as this user, read a worker's secrets there).
	if err := sandbox.Undumpable(); err != nil {
		errorf("warning: cannot hide this process's environment from other processes of its user (prctl PR_SET_DUMPABLE): %v", err)
	}
	// What killed msjfarm processes left in $TMPDIR goes first (scratch).
	scratch.RemoveStale()
	processSecrets = startSecrets(args, os.Getenv)
	code := 0
	root := newRoot(&code)
	warnUnknownEnv(root)
	root.SetArgs(dashDash(root, args))
	c, err := root.ExecuteC()
	if err != nil {
		errorf("%v", err)
		if c != nil {
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", c.CommandPath())
		}
		return 2
	}
	return code
}

// newRoot builds the command tree; the command that runs stores its exit
// status in code.
func newRoot(code *int) *cobra.Command {
	root := &cobra.Command{
		Use:   "msjfarm COMMAND [flags]",
		Short: "simulate multiserver-job scheduling policies, one scenario or whole sweeps on a farm",
		Long: "msjfarm simulates multiserver-job scheduling policies: one scenario locally\n" +
			"(simulate), a sweep file in one process (run), or a distributed farm\n" +
			"(coordinator, worker, submit) with results in a directory or S3/MinIO.\n\n" +
			"Exit status: 0 ok, 1 the run failed (or a task, check or reproduction did, or\n" +
			"status/results found no campaign), 2 a usage or validation error (a sweep\n" +
			"file's errors read file:line:col: key: what is wrong), 130 interrupted by\n" +
			"Ctrl-C (SIGINT), 143 by SIGTERM (run --http-linger ended by Ctrl-C after\n" +
			"the campaign finished exits 0).",
		Example:       "  msjfarm run examples/q-fig3.yaml\n  msjfarm help run\n  msjfarm completion bash > /etc/bash_completion.d/msjfarm",
		Version:       version(),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(os.Stderr)
			cmd.Help()
			*code = 2
			return nil
		},
	}
	root.SetVersionTemplate("msjfarm {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	for _, c := range commands {
		root.AddCommand(build(c, code))
	}
	return root
}

func build(c command, code *int) *cobra.Command {
	cc := &cobra.Command{Use: c.use, Short: c.short, Long: c.long, Example: c.example,
		SilenceErrors: true, SilenceUsage: true}
	if cc.Long == "" {
		cc.Long = strings.ToUpper(c.short[:1]) + c.short[1:] + "."
	}
	if c.env {
		cc.Long += "\n\n" + envNote
		cc.Annotations = map[string]string{envAnnotation: "1"}
	}
	if len(c.subs) > 0 {
		for _, s := range c.subs {
			cc.AddCommand(build(s, code))
		}
		cc.Args = cobra.ArbitraryArgs
		cc.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				// Its path without "msjfarm ", which the message's prefix
				// says ("msjfarm: msjfarm analyze: …").
				msg := fmt.Sprintf("%s: unknown command %q", strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "), args[0])
				cmd.SuggestionsMinimumDistance = 2 // cobra's own default, which only its root applies
				if sug := cmd.SuggestionsFor(args[0]); len(sug) > 0 {
					msg += fmt.Sprintf(" (did you mean %q?)", sug[0])
				}
				return usageError{errors.New(msg)}
			}
			cmd.SetOut(os.Stderr)
			cmd.Help()
			*code = 2
			return nil
		}
		return cc
	}
	run := c.def(cc.Flags())
	cc.Flags().SortFlags = true
	addCompletions(cc, strings.Fields(c.use)[0])
	cc.RunE = func(cmd *cobra.Command, args []string) error {
		*code = run(args)
		return nil
	}
	return cc
}

// dashDash keeps the single-dash long flags of the standard flag package
// working (-workers 2, -nats-url=x in scripts and deployment files): an
// argument -name or -name=value of the command args select, where name is
// a long flag of that command, becomes --name. Others (-h, a negative
// number, an unknown flag) are left for cobra. "--" ends the rewriting.
func dashDash(root *cobra.Command, args []string) []string {
	cmd := root
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		sub, _, err := cmd.Find([]string{a})
		if err != nil || sub == cmd {
			break
		}
		cmd = sub
	}
	out := make([]string, len(args))
	copy(out, args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil || name == "version" && cmd == root {
			out[i] = "-" + a
		}
	}
	return out
}

// version is the module version and VCS revision the binary was built
// from (runtime/debug.ReadBuildInfo); "(devel)" for a plain go build in
// a checkout, with the revision and a "+dirty" mark when it had changes.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	return formatVersion(bi)
}

func formatVersion(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, when string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " revision " + rev
		if dirty {
			v += "+dirty"
		}
		if when != "" {
			v += " (" + when + ")"
		}
	} else {
		v += " (no VCS revision: built outside a git checkout or with -buildvcs=false)"
	}
	return v + ", " + bi.GoVersion
}

// errorf prints "msjfarm: " and the message on stderr, with every
// credential this process knows masked (processSecrets: from the start,
// the environment's and the command line's; once flags are parsed, the
// config file's too). Every error and warning of the command line goes
// through it: a secret pasted where a path, name or bucket belongs is
// was echoed by the error that named it.
func errorf(format string, a ...any) {
	msg := fmt.Sprintf("msjfarm: "+strings.TrimSuffix(format, "\n")+"\n", a...)
	fmt.Fprint(stderr, msg)
}

// stderr is os.Stderr with processSecrets masked (read at each write:
// the list grows once the flags are parsed). The command line's own
// lines go through it; child processes get os.Stderr itself.
var stderr io.Writer = secretMasker{}

type secretMasker struct{}

func (secretMasker) Write(p []byte) (int, error) {
	if _, err := io.WriteString(os.Stderr, redact.Text(string(p), processSecrets...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// fail prints the error line and returns exit status 1, or 2 when an
// argument is (or wraps) a usageError: a mistake of the command line
// found deep in a command (--key with a campaign of a store, a farm
// command without a NATS URL) exited 1, which the README reserves for a
// run that failed.
func fail(format string, a ...any) int {
	errorf(format, a...)
	for _, v := range a {
		if err, ok := v.(error); ok && errors.As(err, new(usageError)) {
			return 2
		}
	}
	return 1
}
