package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
)

// envPrefix starts every variable msjfarm reads.
const envPrefix = "MSJFARM_"

// envAnnotation marks the commands whose flags are also read from
// MSJFARM_<FLAG> (command.env).
const envAnnotation = "msjfarm-env"

// otherEnv are the variables read outside the flags and the sweep: by
// the storage, the plugin host and the plugins, and by the repository's
// own tests, benchmarks and scripts (so that running them does not warn).
// TestEnvNamesKnown checks that every MSJFARM_ name the repository
// mentions is known.
var otherEnv = []string{
	"MSJFARM_S3_ACCESS_KEY", "MSJFARM_S3_SECRET_KEY", storage.EnvS3CA,
	pluginhost.EnvPath, wire.EnvMaxConcurrent, wire.EnvLogLevel,
	"MSJFARM_POLICY_PLUGIN", // the plugin handshake's cookie, in a plugin's environment
	"MSJFARM_MAX_TRACE_SIZE", "MSJFARM_MAX_POINTS", "MSJFARM_MAX_TASKS", "MSJFARM_MAX_SPEC_SIZE",
	"MSJFARM_PYTHON",
	"MSJFARM_NATS_STORE", // deploy/slurm's sbatch script: the embedded server's --store-dir
	// Tests, benchmarks and CI (docs/testing.md).
	"MSJFARM_MINIO", "MSJFARM_NATS_SERVER", "MSJFARM_REQUIRE_SERVERS", "MSJFARM_TOOLS", "MSJFARM_CHROMIUM",
	"MSJFARM_BENCH_ARRIVALS", "MSJFARM_BENCH_BIN", "MSJFARM_BENCH_INPROCESS", "MSJFARM_BENCH_OVERHEAD",
	"MSJFARM_BENCH_RUNNER", "MSJFARM_BENCH_TASKS", "MSJFARM_BENCH_COMPLETIONS", "MSJFARM_BENCH_WORKERS",
	"MSJFARM_BENCH_SLOTS", "MSJFARM_BIN", "MSJFARM_CA",
	"MSJFARM_FAULTS_MINIO_OUTAGE", "MSJFARM_FAULTS_NETNS_CHILD", "MSJFARM_FAULTS_ONLY", "MSJFARM_FAULTS_OUT",
	"MSJFARM_FAULTS_REDUCED", "MSJFARM_LIVE_ARRIVALS", "MSJFARM_OUTAGE", "MSJFARM_RUN_LOG",
	"MSJFARM_EXAMPLES_ONLY", "MSJFARM_EXAMPLES_DEFAULT", "MSJFARM_EXAMPLES_CALIBRATE",
	"MSJFARM_EXAMPLES_CALIBRATE_OUT", "MSJFARM_TEST_SECRET", "MSJFARM_LUBLIN_SWF",
	"MSJFARM_PACKING_REPS", "MSJFARM_PACKING_ARRIVALS",
}

// knownEnv is every variable msjfarm reads: MSJFARM_<FLAG> for each flag
// of a command that reads its flags from the environment, the sweep's
// overrides, and otherEnv.
func knownEnv(root *cobra.Command) map[string]bool {
	known := map[string]bool{}
	for _, n := range append(sweep.EnvVars(), otherEnv...) {
		known[n] = true
	}
	for _, f := range envFlags(root) {
		known[envName(f)] = true
	}
	return known
}

// envFlags are the flag names of every command that reads its flags from
// the environment and a config file: the keys a config file may hold
// (one file may serve a coordinator and its workers).
func envFlags(root *cobra.Command) []string {
	seen := map[string]bool{}
	var out []string
	visitEnvFlags(root, func(f *pflag.Flag) {
		if !seen[f.Name] {
			seen[f.Name] = true
			out = append(out, f.Name)
		}
	})
	sort.Strings(out)
	return out
}

// visitEnvFlags calls fn with each flag of each command under root that
// reads its flags from the environment and a config file.
func visitEnvFlags(root *cobra.Command, fn func(*pflag.Flag)) {
	visitEnvCommands(root, func(_ *cobra.Command, f *pflag.Flag) { fn(f) })
}

// visitEnvCommands is visitEnvFlags with the command each flag is of.
func visitEnvCommands(root *cobra.Command, fn func(*cobra.Command, *pflag.Flag)) {
	if root.Annotations[envAnnotation] != "" {
		root.Flags().VisitAll(func(f *pflag.Flag) { fn(root, f) })
	}
	for _, c := range root.Commands() {
		visitEnvCommands(c, fn)
	}
}

// envName is the variable that sets flag name: MSJFARM_<NAME>, dashes as
// underscores.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// configKeys is envFlags of the whole command tree, built once. It is set
// in init: the commands read it, so their table cannot refer to it.
var configKeys func() []string

func init() {
	configKeys = sync.OnceValue(func() []string {
		var code int
		return envFlags(newRoot(&code))
	})
}

// checkConfigShape refuses a --config file that viper would misread: a
// key repeated in another case (viper folds keys and keeps one of them
// silently: "Storage:" under "storage:"), or keys nested absurdly deep
// (sweep.CheckShape). A file over 1 MiB is no farm configuration: refused
// before it is read.
func checkConfigShape(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	switch {
	case !fi.Mode().IsRegular():
		return errors.New("not a regular file")
	case fi.Size() > 1<<20:
		return fmt.Errorf("%d bytes, more than 1 MiB: no farm configuration is this large", fi.Size())
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".yaml", ".yml", ".toml", ".json":
	default:
		// viper's own words were `Unsupported Config Type "conf"`.
		return fmt.Errorf("its extension %q does not name a format: name it .yaml, .yml, .toml or .json", ext)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return sweep.CheckShape(data, strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), "."), "")
}

// checkConfigKeys refuses a config file key that is no command's flag,
// naming the nearest flags: viper ignores such a key, so a misspelt one
// (storge: s3://…) was silently without effect. A flag of another command
// is accepted, since one file may configure a coordinator and its
// workers (deploy/slurm), and so are the credentials (credentialKeys).
func checkConfigKeys(path string) error {
	cv := viper.New()
	cv.SetConfigFile(path)
	if err := cv.ReadInConfig(); err != nil {
		return err
	}
	flags := slices.Concat(configKeys(), credentialKeys)
	textual := textFlags()
	fresh := configTrialFlags()
	var bad []string
	for _, k := range cv.AllKeys() {
		switch sug := sweep.Suggest(k, flags); {
		case slices.Contains(flags, k) && (textual[k] != "" || slices.Contains(credentialKeys, k)):
			single := textual[k] == "string" || textual[k] == ""
			if v := cv.Get(k); !isText(v, single) {
				fix := "quote it (YAML reads unquoted 1e3, 0x10 or 2026-01-01 as a number or a date: a password 1e3 became \"1000\")"
				if _, list := v.([]any); list && single {
					fix = "give one value"
				} else if list {
					fix = "quote every item"
				}
				bad = append(bad, fmt.Sprintf("%s: the file gives %s, not text: %s", k, kindOf(v), fix))
			}
		case slices.Contains(flags, k):
			fl := fresh[k]
			if fl == nil {
				break
			}
			if _, list := cv.Get(k).([]any); list {
				break // a repeatable flag's items: text, checked above
			}
			if val := cv.GetString(k); fl.flag.Value.Set(val) != nil {
				bad = append(bad, fmt.Sprintf("%s (--%s): %q is not %s (a flag of %s)", k, k, val, flagKind(fl.flag.Value.Type()), strings.Join(fl.commands, ", ")))
			}
		case len(sug) > 0:
			bad = append(bad, fmt.Sprintf("unknown key %q (did you mean %s?)", k, sweep.QuoteOr(sug)))
		default:
			bad = append(bad, fmt.Sprintf("unknown key %q (the keys are the flag names of msjfarm's farm commands: msjfarm help run, worker, coordinator)", k))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// configTrialFlags are the flags of a command tree of their own, by name, on
// which checkConfigKeys tries the values of a config file: a key of
// another command's flag was accepted whatever its value (store: s3://…,
// meant as storage:, is report's boolean --store). Set in init, as
// configKeys is; what the trials set stays in that tree.
var configTrialFlags func() map[string]*configFlag

// configFlag is a flag of that tree and the commands that have it.
type configFlag struct {
	flag     *pflag.Flag
	commands []string
}

func init() {
	configTrialFlags = sync.OnceValue(func() map[string]*configFlag {
		var code int
		out := map[string]*configFlag{}
		visitEnvCommands(newRoot(&code), func(c *cobra.Command, f *pflag.Flag) {
			if out[f.Name] == nil {
				out[f.Name] = &configFlag{flag: f}
			}
			out[f.Name].commands = append(out[f.Name].commands, c.CommandPath())
		})
		return out
	})
}

// textFlags are the config keys whose flags hold text, with their flag
// type (string, stringArray, stringSlice), built once. It is set in init,
// as configKeys is.
var textFlags func() map[string]string

func init() { textFlags = sync.OnceValue(textFlagTypes) }

func textFlagTypes() map[string]string {
	var code int
	out := map[string]string{}
	visitEnvFlags(newRoot(&code), func(f *pflag.Flag) {
		if t := f.Value.Type(); t == "string" || t == "stringArray" || t == "stringSlice" {
			out[f.Name] = t
		}
	})
	return out
}

// isText reports whether a config value read from YAML, TOML or JSON is
// text: a string, or (unless single) a list of strings for a repeatable
// flag.
func isText(v any, single bool) bool {
	switch x := v.(type) {
	case string:
		return true
	case []any:
		if single {
			return false
		}
		for _, e := range x {
			if _, ok := e.(string); !ok {
				return false
			}
		}
		return true
	}
	return false
}

// kindOf names the kind of a config value that is not text.
func kindOf(v any) string {
	switch v.(type) {
	case int, int64, uint64, float64:
		return fmt.Sprintf("the number %v", v)
	case bool:
		return fmt.Sprintf("%v", v)
	case time.Time:
		return "a date"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("a %T", v)
}

// unknownEnv warns of each MSJFARM_ variable in environ that msjfarm
// reads under no name, with the nearest names it does read: a misspelt
// override (MSJFARM_REPLICATONS=30, MSJFARM_STORGE=s3://…) is otherwise
// silently ignored, and a sweep runs with the file's 3 replications, or a
// farm stores its results in the local default. A warning, not an error:
// the environment is the whole session's, and a stale variable must not
// stop every command.
func unknownEnv(root *cobra.Command, environ []string) []string {
	known := knownEnv(root)
	suffixes := make([]string, 0, len(known))
	for n := range known {
		suffixes = append(suffixes, strings.TrimPrefix(n, envPrefix))
	}
	sort.Strings(suffixes)
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || known[name] {
			continue
		}
		// Suggested on the names without the prefix, where they differ, and
		// not a short name that is merely inside a long one (CA in
		// REPLICATONS).
		rest := strings.TrimPrefix(name, envPrefix)
		var near []string
		for _, s := range sweep.Suggest(rest, suffixes) {
			if 2*len(s) >= len(rest) {
				near = append(near, envPrefix+s)
			}
		}
		mean := ""
		if len(near) > 0 {
			mean = fmt.Sprintf(" (did you mean %s?)", strings.Join(near, " or "))
		}
		out = append(out, fmt.Sprintf("%s is set, but msjfarm reads no variable of that name%s: it has no effect", name, mean))
	}
	sort.Strings(out)
	return out
}

// warnUnknownEnv prints unknownEnv's warnings for this process.
func warnUnknownEnv(root *cobra.Command) {
	for _, w := range unknownEnv(root, os.Environ()) {
		errorf("warning: %s", w)
	}
}
