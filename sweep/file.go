// Package sweep reads sweep files (YAML or TOML, through viper) and expands
// them deterministically into tasks: one replication of one parameter point.
//
// A sweep file names a system (a named workload, explicit classes, or an SWF
// trace), axes to sweep, policies with their parameters (a list value is an
// axis), a number of replications and a run length:
//
//	name: quickswap-fig3
//	seed: 1
//	workload: one-or-all          # or servers + classes, or trace
//	axes:
//	  arrival_rate: [2, 4, 6, 7]   # or load: [...]
//	policies:
//	  - fcfs
//	  - {name: msfq, threshold: [1, 16, 31]}
//	replications: 30
//	run: {arrivals: 1e7, warmup: 1e5, deadline: 2h}
//	# optional sequential mode: replications is then the initial number
//	precision: {metric: mean_response, rel_half_width: 0.05, max_replications: 200, batch: 10}
//	# optional named overlays, one selected by --profile or MSJFARM_PROFILE (see Profile)
//	profiles: {paper: {replications: 30, run: {arrivals: 1e7}}}
//
// Axis names: arrival_rate, load, servers, and class fields written
// class[<i>].share, class[<i>].need or class[<i>].service.<field> (e.g.
// class[1].service.mean). Axes are crossed (cartesian product) except those
// listed together in a zip group, which advance together.
package sweep

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/swf"
	"github.com/msjfarm/msjfarm/model/workload"
)

// File is a sweep file as written.
type File struct {
	Name string `mapstructure:"name" json:"name"`
	// Description is free text shown in the report's header (what the
	// campaign shows, where its parameters come from). Like Name it is part
	// of the campaign id when set; omitted from the JSON when empty, so the
	// ids of sweeps without it are unchanged.
	Description  string               `mapstructure:"description" json:"description,omitempty"`
	Seed         uint64               `mapstructure:"seed" json:"seed"`
	Workload     string               `mapstructure:"workload" json:"workload,omitempty"`
	Servers      int                  `mapstructure:"servers" json:"servers,omitempty"`
	Classes      []workload.ClassSpec `mapstructure:"classes" json:"classes,omitempty"`
	Interarrival *dist.Spec           `mapstructure:"interarrival" json:"interarrival,omitempty"`
	Trace        *TraceSpec           `mapstructure:"trace" json:"trace,omitempty"`
	Axes         map[string][]any     `mapstructure:"axes" json:"axes,omitempty"`
	Zip          [][]string           `mapstructure:"zip" json:"zip,omitempty"`
	Policies     []any                `mapstructure:"policies" json:"policies"`
	Replications int                  `mapstructure:"replications" json:"replications"`
	Run          RunSpec              `mapstructure:"run" json:"run"`
	// Precision, if set, makes replications the initial number per point
	// and lets the coordinator add replications until the confidence
	// interval is narrow enough (see Precision). Omitted from the JSON
	// when unset, so campaign ids of sweeps without it are unchanged.
	Precision *Precision `mapstructure:"precision" json:"precision,omitempty"`
	// Limit, if set, asks for each policy's stability limit λ_max instead
	// of an arrival-rate axis (see LimitSpec, limit.go). Omitted from the
	// JSON when unset, so campaign ids of other sweeps are unchanged.
	Limit *LimitSpec `mapstructure:"limit" json:"limit,omitempty"`
	// Compare, if set, names the baseline of the paired comparisons the
	// summary and report make at every scenario (see CompareSpec); without
	// it the baseline is the first policy. Omitted from the JSON when
	// unset, so campaign ids of sweeps without it are unchanged.
	Compare *CompareSpec `mapstructure:"compare" json:"compare,omitempty"`
	// Profiles are named overlays (see Profile) that a run selects with
	// --profile or MSJFARM_PROFILE. Never part of the JSON, hence of the
	// campaign id: the id is that of the file as overlaid, so adding a
	// profiles block leaves the ids of unselected runs unchanged.
	Profiles map[string]Profile `mapstructure:"profiles" json:"-"`
	// Verify is the fraction of tasks re-run on a second worker and
	// compared bit for bit (spot verification, CheckVerify). Never part of
	// the JSON, hence of the campaign id: it changes no result. The
	// submitter sends it beside the spec (protocol.SubmitRequest.Verify).
	Verify float64 `mapstructure:"verify" json:"-"`

	// src is where the file was read from (positions of its keys), for
	// the errors of the checks after decoding; nil for a File built in
	// code or decoded from a request.
	src *source
}

// TraceSpec replays an SWF file (B §6.2), pinned by content: SHA256 and
// Size name the trace's bytes, uploaded by the submitting client to
// storage under storage.TraceKey(SHA256). The farm (coordinator and
// workers) reads the trace only from there, never from a path.
type TraceSpec struct {
	// File is the SWF file on the submitting machine, read only by the
	// client that submits the sweep (ReadTraceFile). It is never encoded
	// (json:"-"): not in a submit request, not in the stored spec, not in
	// the campaign id, which therefore depends on the trace's content and
	// not on where it lies.
	File string `mapstructure:"file" json:"-"`
	// SHA256 is the hex sha256 of the trace's content. ReadTraceFile fills
	// it in from File; a sweep may also give it alone, naming a trace
	// already in storage (a stored campaign spec does).
	SHA256 string `mapstructure:"sha256" json:"sha256"`
	// Size is the trace's size in bytes, filled in with SHA256.
	Size      int64   `mapstructure:"size" json:"size"`
	TimeScale float64 `mapstructure:"time_scale" json:"time_scale,omitempty"`

	// local is the canonical form of File that ReadTraceFile read, kept
	// on the submitting machine so that Plan can try every policy on the
	// workload the trace makes and a dry run can calibrate on it, before
	// anything is uploaded (nil: a trace named by sha256 alone, or one
	// decoded from a stored spec).
	local []byte
	// shape is local's shape (swf.Shape: what Read of it reports for any
	// servers value, without the jobs), gathered as local was written
	// (swf.CanonicalShape) or, for a trace read from storage, when it
	// was read (swf.ShapeOf); nil with local nil, or with stored bytes
	// that do not parse (the first point that needs them says why).
	// Plan builds a servers value's workload from local and shape
	// without the parsed trace (traceWorkload). Like local, never
	// encoded and never sent (ForFarm drops both).
	shape *swf.Shape
}

// RunSpec is the run block of a sweep file: the engine's run configuration
// (wire.RunConfig, the type plugins receive: arrivals, warmup, mser,
// max_in_system, drain_limit, series_interval, series_max), validated by
// the engine's own rules, plus what only the farm uses, the deadline.
// Counts may be written in exponent form (1e7) but must be whole. Deadline
// is a duration with a unit ("90m"); a bare number is rejected rather than
// read as nanoseconds.
type RunSpec struct {
	wire.RunConfig `mapstructure:",squash"`
	// Deadline bounds one replication's wall time; a replication past it is
	// abandoned and retried (0: none).
	Deadline time.Duration `mapstructure:"deadline" json:"deadline,omitempty"`
}

// envKeys are the scalar keys an environment variable MSJFARM_<KEY> (dots as
// underscores, e.g. MSJFARM_RUN_ARRIVALS=1e5) overrides. viper only applies
// an environment variable to Unmarshal when the key is bound, so they are
// listed here.
var envKeys = []string{"name", "description", "seed", "workload", "servers", "replications",
	"run.arrivals", "run.warmup", "run.mser", "run.max_in_system", "run.drain_limit",
	"run.series_interval", "run.series_max", "run.deadline"}

// EnvVars are the environment variables a sweep reads: MSJFARM_PROFILE
// and the override of each of envKeys.
func EnvVars() []string {
	out := []string{ProfileEnv}
	for _, k := range envKeys {
		out = append(out, envName(k))
	}
	return out
}

// envName is the variable that overrides key k.
func envName(k string) string { return "MSJFARM_" + strings.ToUpper(strings.ReplaceAll(k, ".", "_")) }

// written reports whether key (a path, "trace.time_scale") was given: in
// the file, in the selected profile, or by its environment override. It
// tells an explicit 0 from a key left out where 0 means "not set": an
// explicit servers: 0 or time_scale: 0 ran as if absent, where -1 was
// refused. A File decoded from a stored spec knows no positions: false.
func (f *File) written(key string) bool {
	if f.src == nil {
		return false
	}
	if f.src.env[key] != "" {
		return true
	}
	// A null (servers: ~) is refused when the file is read (nullErrors):
	// a key in the file is a key given.
	given := func(path string) bool {
		_, ok := f.src.keys[path]
		return ok
	}
	return given(key) || f.src.profile != "" && given("profiles."+f.src.profile+"."+key)
}

// EnvOverrides are the environment overrides Load applied to the file
// ("MSJFARM_REPLICATIONS=2 (replications)"), in envKeys' order, and the
// profile the environment selected ("MSJFARM_PROFILE=paper (profile)"):
// what makes the campaign another than the file alone would give, which
// run and submit say (nothing said, a variable left in the shell changed
// a campaign and its archive's submitted file described another).
func (f *File) EnvOverrides() []string {
	if f.src == nil {
		return nil
	}
	var out []string
	if f.src.profileEnv {
		out = append(out, ProfileEnv+"="+f.src.profile+" (profile)")
	}
	for _, k := range envKeys {
		if v := f.src.env[k]; v != "" {
			out = append(out, envName(k)+"="+v+" ("+k+")")
		}
	}
	return out
}

// Load reads a sweep file; the format follows the extension (.yaml, .yml,
// .toml, .json). Unknown keys, wrong types and bare-number durations are
// errors naming the key. The profile named by MSJFARM_PROFILE, if set, is
// overlaid (see LoadProfile), and each of envKeys' variables that is set
// overrides its key (EnvOverrides).
func Load(path string) (*File, error) { return LoadProfile(path, "") }

// LoadProfile reads a sweep file like Load and overlays its profile named
// profile; an empty name means the one MSJFARM_PROFILE names, if any, so the
// environment works wherever no --profile flag is given.
func LoadProfile(path, profile string) (*File, error) {
	return LoadProfileLimit(path, profile, MaxFileSize)
}

// LoadProfileLimit is LoadProfile for a file of at most limit bytes.
func LoadProfileLimit(path, profile string, limit int64) (*File, error) {
	fromEnv := false
	if profile == "" {
		profile = os.Getenv(ProfileEnv)
		fromEnv = profile != ""
	}
	data, err := readLimited(path, limit, "sweep file")
	if err != nil {
		return nil, err
	}
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if ext == "yml" {
		ext = "yaml"
	}
	f, err := parseProfile(data, ext, profile, path, true)
	if err != nil {
		return nil, err
	}
	f.src.profileEnv = fromEnv
	if f.Trace != nil && f.Trace.File != "" && !filepath.IsAbs(f.Trace.File) {
		f.Trace.File = filepath.Join(filepath.Dir(path), f.Trace.File)
	}
	return f, nil
}

// Parse reads a sweep file's content in the given format (yaml, toml, json)
// with no profile selected and no environment override applied: it reads
// stored campaign specs, which must not change with the environment (an
// MSJFARM_REPLICATIONS left in the shell made report expand a stored spec
// into another campaign and fail with "different msjfarm version?").
func Parse(data []byte, format string) (*File, error) { return ParseProfile(data, format, "") }

// ParseProfile reads a sweep file's content like Parse and, if profile is
// not empty, overlays that profile (see Profile).
func ParseProfile(data []byte, format, profile string) (*File, error) {
	return parseProfile(data, format, profile, "", false)
}

// parseProfile is ParseProfile for the content of the file named name
// ("" when it is not a file), with the environment's overrides if env:
// every error is an *Error (or Errors) placed at its line and column, and
// the File keeps the positions for the checks that come later (Plan,
// PlanLimit, ReadTraceFile).
func parseProfile(data []byte, format, profile, name string, env bool) (*File, error) {
	noPos := &source{file: name}
	switch format {
	case "yaml", "toml", "json":
	default:
		return nil, noPos.locate(fmt.Errorf("unsupported sweep file format %q (use .yaml, .toml or .json)", format))
	}
	data, src, err := indexShape(data, format)
	if src == nil {
		return nil, noPos.locate(err)
	}
	src.file, src.profile = name, strings.ToLower(profile)
	if err != nil {
		return nil, src.locate(err)
	}
	// A key delimiter that cannot occur in axis names keeps "class[1].service.mean"
	// one key; env keys are bound with the same delimiter.
	v := viper.NewWithOptions(viper.KeyDelimiter("::"))
	v.SetConfigType(format)
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		if e := src.tomlDecodeError(err); e != nil {
			return nil, src.locate(e)
		}
		return nil, src.locate(fmt.Errorf("not valid %s: %w", strings.ToUpper(format), err))
	}
	src.walk()
	if err := src.nullErrors(); err != nil {
		return nil, src.locate(err)
	}
	for _, k := range envKeys {
		val, ok := os.LookupEnv(envName(k))
		if !env || !ok || val == "" {
			continue
		}
		if err := v.BindEnv(strings.ReplaceAll(k, ".", "::"), envName(k)); err != nil {
			return nil, err
		}
		if src.env == nil {
			src.env = map[string]string{}
		}
		src.env[k] = val
	}
	// The first decoding checks the whole file, every profile included,
	// so that the overlay below only ever merges well-typed values.
	f, err := decodeFile(v)
	if err != nil {
		return nil, src.locate(err)
	}
	f.src = src
	src.keepForProfiles(f, v)
	if profile == "" {
		return f, nil
	}
	if err := overlayProfile(v, f, profile); err != nil {
		return nil, src.locate(fieldErr("profiles", nil, "%v", err))
	}
	if f, err = decodeFile(v); err != nil {
		return nil, src.locate(err)
	}
	f.src = src
	return f, nil
}

func decodeFile(v *viper.Viper) (*File, error) {
	// Unknown keys first, each with its path and the nearest known keys:
	// the decoder would name them only by the Go type that lacks them.
	if es := unknownKeys(v.AllSettings(), reflect.TypeOf(File{}), ""); len(es) > 0 {
		return nil, es
	}
	var f File
	err := v.UnmarshalExact(&f, viper.DecodeHook(mapstructure.ComposeDecodeHookFunc(
		strictKinds, strictDuration, numberFromString, wholeFromFloat, fitsInt)))
	if err != nil {
		return nil, decodeErrors(err)
	}
	// The decoder drops empty maps: "limit: {}" is a search with every
	// default, and "precision: {}" a block that lacks its metric; dropped,
	// the first ran a sweep of no axes ("axes: give arrival_rate or
	// load") and the second no precision mode at all.
	if raw, ok := v.Get("limit").(map[string]any); ok && len(raw) == 0 && f.Limit == nil {
		f.Limit = &LimitSpec{}
	}
	if raw, ok := v.Get("precision").(map[string]any); ok && len(raw) == 0 && f.Precision == nil {
		f.Precision = &Precision{}
	}
	// The decoder drops empty maps: an empty profile ("quick: {}", the
	// file as written) must still be selectable.
	if raw, ok := v.Get("profiles").(map[string]any); ok {
		for name := range raw {
			if _, ok := f.Profiles[name]; !ok {
				if f.Profiles == nil {
					f.Profiles = map[string]Profile{}
				}
				f.Profiles[name] = Profile{}
			}
		}
	}
	return &f, nil
}

// strictKinds rejects the coercions viper's weakly typed decoding would
// otherwise apply silently: a boolean read as a number or a string
// (replications: true became 1), a number read as a boolean (mser: 1), and
// a negative whole number read into an unsigned field (seed: -1 became
// 2⁶⁴−1). The decoder names the field in front of the error.
func strictKinds(from, to reflect.Type, data any) (any, error) {
	isNum := func(k reflect.Kind) bool {
		switch k {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			return true
		}
		return false
	}
	switch {
	case from.Kind() == reflect.Bool && (isNum(to.Kind()) || to.Kind() == reflect.String):
		want := "number"
		if to.Kind() == reflect.String {
			want = "string"
		}
		return nil, fmt.Errorf("want a %s, got the boolean %v", want, data)
	case isNum(from.Kind()) && to.Kind() == reflect.Bool:
		return nil, fmt.Errorf("want true or false, got the number %v", data)
	case (from.Kind() == reflect.Slice || from.Kind() == reflect.Array) && isMap(to):
		// The weakly typed decoder merged a list of maps into one map,
		// the last of a repeated key winning: "axes: [{arrival_rate: [1,
		// 2]}, {arrival_rate: [4, 5]}]" ran λ = 4, 5 only.
		return nil, fmt.Errorf("want %s, got a list (a list of maps is not one map)", kindWord(to))
	case (from.Kind() == reflect.String || isNum(from.Kind()) || from.Kind() == reflect.Bool) && isMap(to):
		// The decoder said `expected a map or struct, got "string"`.
		return nil, fmt.Errorf("want %s, got %s", kindWord(to), valueWord(data))
	case to.Kind() == reflect.Uint64 || to.Kind() == reflect.Uint:
		switch from.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			if reflect.ValueOf(data).Int() < 0 {
				return nil, fmt.Errorf("%v is negative: want a whole number >= 0", data)
			}
		}
	}
	return data, nil
}

// isMap: t (or what it points to) is decoded from a map of keys.
func isMap(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return (t.Kind() == reflect.Map || t.Kind() == reflect.Struct) && t != reflect.TypeOf(time.Duration(0))
}

// strictDuration rejects numbers for duration fields: viper would read 30 as
// 30 nanoseconds.
func strictDuration(from, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeOf(time.Duration(0)) {
		return data, nil
	}
	switch from.Kind() {
	case reflect.String:
		d, err := time.ParseDuration(strings.TrimSpace(data.(string)))
		if err != nil {
			return nil, fmt.Errorf("%s is not a duration: write a number and a unit, like \"90m\", \"2h\" or \"1h30m\" (units ns, us, ms, s, m, h)", quoted(data.(string)))
		}
		return d, nil
	default:
		return nil, fmt.Errorf("duration %v has no unit: write it like \"90m\" or \"2h\"", data)
	}
}

// fitsInt refuses a whole number past an int field's range, which the
// decoder would wrap without a word: 2⁶⁴−1 (decoded as unsigned) was read
// as −1 ("series_max: must be >= 0, got -1"), and on a 32-bit build 10¹⁸
// was read as −1486618624 and 2³² + 5 would have been 5. It runs last, on
// what wholeFromFloat and numberFromString made of the value.
func fitsInt(from, to reflect.Type, data any) (any, error) {
	if to.Kind() != reflect.Int {
		return data, nil
	}
	v := reflect.ValueOf(data)
	fits := true
	switch from.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		fits = int64(int(v.Int())) == v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		fits = v.Uint() <= math.MaxInt
	}
	if !fits {
		return nil, fmt.Errorf("%v is not within [%d, %d], the range of a whole number on this %d-bit build", data, math.MinInt, math.MaxInt, strconv.IntSize)
	}
	return data, nil
}

// wholeFromFloat lets counts be written in exponent form (arrivals: 1e7, which
// YAML reads as a float) and rejects a count that is not a whole number or
// does not fit, where the decoder would silently truncate it.
func wholeFromFloat(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.Float64 && from.Kind() != reflect.Float32 {
		return data, nil
	}
	x := reflect.ValueOf(data).Float()
	switch to.Kind() {
	case reflect.Int, reflect.Int64:
		if x != math.Trunc(x) || math.Abs(x) >= 1<<63 {
			return nil, fmt.Errorf("%v is not a whole number within ±2⁶³", data)
		}
		return int64(x), nil
	case reflect.Uint64:
		if x != math.Trunc(x) || x < 0 {
			return nil, fmt.Errorf("%v is not a whole number >= 0", data)
		}
		if x >= 1<<64 {
			// 2⁶⁴ and more reach here as floats, the decoder's integers
			// ending at 2⁶⁴−1: "not a whole number >= 0" was said of them.
			return nil, fmt.Errorf("%v is more than 2⁶⁴−1 = 18446744073709551615, the largest it may be", data)
		}
		return uint64(x), nil
	}
	return data, nil
}

// unitHint says what to write instead of a number with a unit or suffix
// ("100k", "5%"), which the sweep file does not read.
func unitHint(s string) string {
	switch {
	case strings.HasSuffix(s, "%"):
		return " (no percentages: 0.05, not 5%)"
	case s != "" && strings.ContainsRune("0123456789.+-", rune(s[0])):
		return " (the number alone, without a unit or suffix: 1e5, not 100k)"
	}
	return ""
}

// numberFromString lets environment overrides such as MSJFARM_RUN_ARRIVALS=1e5
// reach numeric fields.
func numberFromString(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String {
		return data, nil
	}
	s := strings.TrimSpace(data.(string))
	switch to.Kind() {
	// The whole text is the number: fmt.Sscan read its leading number and
	// dropped the rest, so "100k" arrivals ran 100 and a "5%" precision
	// target meant ±500%.
	case reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%s is not a number%s", quoted(s), unitHint(s))
		}
		return x, nil
	case reflect.Int, reflect.Int64, reflect.Uint64:
		// Digits alone are read as the integer they write: through a
		// float64, MSJFARM_SEED=9007199254740993 was seed …992 (the same
		// campaign), and 2⁶⁴−1, a valid seed in a file, was refused.
		if to.Kind() == reflect.Uint64 {
			if u, err := strconv.ParseUint(s, 10, 64); err == nil {
				return u, nil
			}
		} else if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return reflect.ValueOf(i).Convert(to).Interface(), nil
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || x != math.Trunc(x) {
			return nil, fmt.Errorf("%s is not a whole number%s", quoted(s), unitHint(s))
		}
		// Through wholeFromFloat's range checks, so "-1" is not read as
		// 2⁶⁴−1 nor "1e30" wrapped around.
		return wholeFromFloat(reflect.TypeOf(x), to, x)
	}
	return data, nil
}
