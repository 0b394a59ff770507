package sweep

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/msjfarm/msjfarm/internal/termtext"
	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/swf"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/sim"
)

// Catalog answers what policies exist and what parameters each takes; the
// worker's plugin host or the built-in catalogue implements it, so a sweep is
// validated against the very schemas that will run it.
type Catalog interface {
	Schema(policy string) ([]sim.Param, error)
}

// WorkloadChecker is an optional extension of a Catalog that can try a
// policy variant on a point's workload. Some ranges depend on the workload
// (MSFQ's threshold must lie in [0, k−1]), so the schema cannot state them
// and only the policy's Init knows them; without this check such a sweep
// was accepted and every task of the variant failed at run time. The
// built-in catalogue implements it; Expand calls it once per distinct
// (policy, parameters, system) of the sweep.
type WorkloadChecker interface {
	CheckWorkload(policy string, params map[string]any, w *sim.Workload) error
}

// SpecChecker is an optional extension of a WorkloadChecker that is also
// handed what a plugin request carries: the point's workload spec, an
// arrival rate of the point and the inter-arrival distribution, beside the
// workload built from them. A policy served by a plugin binary can only be
// tried in that binary, through such a request (worker/registry runs it
// 200 arrivals long). Generated workloads only: a replayed trace is tried
// through CheckWorkload.
type SpecChecker interface {
	CheckSpec(policy string, params map[string]any, spec workload.Spec, rate float64, ia *dist.Spec, w *sim.Workload) error
}

// Task is one replication of one point: everything a worker needs, and
// nothing else, so that its hash identifies the work.
type Task struct {
	// ID is the content hash of the rest of the task (see TaskID).
	ID string `json:"id"`
	// Point identifies the parameter point (scenario, policy, parameters):
	// the replications of a point share it.
	Point string `json:"point"`
	// Scenario identifies the scenario without the policy: every policy at
	// the same scenario and replication gets the same seed (common random
	// numbers).
	Scenario     string         `json:"scenario"`
	Replication  int            `json:"replication"`
	Seed         uint64         `json:"seed"`
	Workload     workload.Spec  `json:"workload"`
	ArrivalRate  float64        `json:"arrival_rate,omitempty"`
	Interarrival *dist.Spec     `json:"interarrival,omitempty"`
	Trace        *TraceRef      `json:"trace,omitempty"`
	Policy       string         `json:"policy"`
	Params       map[string]any `json:"params"`
	Run          RunSpec        `json:"run"`
	// Axes are this point's values of the swept axes (policy parameters as
	// "<param>"), for summaries and plots.
	Axes map[string]any `json:"axes"`
	// Load is the offered load of the scenario (0 for a trace).
	Load float64 `json:"load"`
}

// TraceRef pins a replayed trace by content: a worker fetches
// storage.TraceKey(SHA256), checks its size and sha256, and replays it
// with TimeScale. No path: a task never names a file of any machine.
type TraceRef struct {
	SHA256    string  `json:"sha256"`
	Size      int64   `json:"size"`
	TimeScale float64 `json:"time_scale"`
}

// Campaign is an expanded sweep.
type Campaign struct {
	ID       string   `json:"id"`
	File     *File    `json:"spec"`
	Tasks    []Task   `json:"-"`
	Points   int      `json:"points"`
	Warnings []string `json:"warnings,omitempty"`

	// scenarios maps each scenario id to its point label, to reject an
	// axis that repeats a scenario.
	scenarios map[string]string
	// shareNotes holds the share totals already warned about.
	shareNotes map[string]bool
	// checked holds the (policy, parameters, system) triples a
	// WorkloadChecker has accepted.
	checked map[string]bool

	// The plan the tasks are generated from on demand (iter.go).
	plan
}

// SimWorkload builds the engine workload of a task with generated
// arrivals, through the one builder every runner uses
// (workload.Spec.BuildArrivals). A trace task needs its trace's content,
// which only the worker's verified fetch provides: TraceWorkload.
func (t *Task) SimWorkload() (*sim.Workload, error) {
	if t.Trace != nil {
		return nil, fmt.Errorf("trace %s: a replayed trace's workload is built from its verified content (TraceWorkload), not read from a path", t.Trace.SHA256)
	}
	return t.Workload.BuildArrivals(t.ArrivalRate, t.Interarrival, nil)
}

// Config is the engine configuration of a task.
func (t *Task) Config() sim.Config { return t.Run.Config(t.Seed) }

// hashHex is the first n hex digits of SHA-256 over v's JSON encoding. It
// fails only for a value JSON cannot encode (NaN or ±Inf): Expand rejects
// those fields first with an error naming them, so this error is a last
// line of defence, never a panic.
func hashHex(v any, n int) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return hashOf(b, n), nil
}

// hashOf is the first n hex digits of SHA-256 over b.
func hashOf(b []byte, n int) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])[:n]
}

// TaskID is the hash of the task's content with ID blanked: 24 hex digits
// (96 bits) of SHA-256 over its JSON encoding (map keys sorted by encoding/json).
// A task JSON cannot encode (a NaN or infinite number, which Expand never
// produces and a decoded message cannot hold) has the empty id, which
// matches no task.
func TaskID(t Task) string {
	t.ID = ""
	id, err := hashHex(t, 24)
	if err != nil {
		return ""
	}
	return id
}

// Seed derivation (documented in the README): the seed of replication r at a
// scenario is the first 8 bytes, big-endian, of
// SHA-256(JSON{"seed": campaign seed, "replication": r, "scenario": scenario}),
// where scenario is the JSON of the workload, arrival process and axis values
// WITHOUT the policy — so every policy sees the same jobs.
func deriveSeed(campaignSeed uint64, rep int, scenario any) uint64 {
	b, _ := json.Marshal(map[string]any{"seed": campaignSeed, "replication": rep, "scenario": scenario})
	s := sha256.Sum256(b)
	return binary.BigEndian.Uint64(s[:8])
}

// paramInError finds the parameter sim.Resolve's errors name.
var paramInError = regexp.MustCompile(`^parameter "([^"]+)"`)

// axisNames are the axes a misspelt axis is compared with.
var axisNames = []string{"arrival_rate", "load", "servers", "class[0].need", "class[0].share", "class[0].service.mean",
	"class[0].service.scv", "class[0].service.low", "class[0].service.high", "class[0].service.alpha",
	"class[0].service.shape", "class[0].service.scale"}

var classAxis = regexp.MustCompile(`^class\[(\d+)\]\.(need|share|service\.(mean|scv|low|high|alpha|shape|scale))$`)

type axis struct {
	names  []string
	values [][]any // values[i][j]: i-th step, j-th name
}

// Expand validates the sweep against the catalogue and expands it into
// tasks, in a deterministic order (points in axis order, then policies in
// file order, then replications): Plan, with every task in Tasks. A
// campaign too large to hold in memory is planned instead and its tasks
// generated on demand (iter.go).
func Expand(f *File, cat Catalog) (*Campaign, error) {
	c, err := Plan(f, cat)
	if err != nil {
		return nil, err
	}
	if err := c.Materialize(); err != nil {
		return nil, f.src.locate(err)
	}
	return c, nil
}

// Materialize fills Tasks with every task of a planned campaign: Expand
// in two steps, for a caller that checks Len against a limit first.
func (c *Campaign) Materialize() error {
	c.Tasks = make([]Task, 0, c.Len())
	return c.Each(func(t Task) error {
		c.Tasks = append(c.Tasks, t)
		return nil
	})
}

// Plan validates the sweep against the catalogue as Expand does (every
// point is built and checked once) and returns the campaign without its
// tasks: Len counts them, Each and TaskAt generate them, in Expand's order,
// without ever holding more than one scenario's tasks.
func Plan(f *File, cat Catalog) (*Campaign, error) { return PlanWithin(f, cat, Size{}) }

// MaxNameLength and MaxDescriptionBytes bound a campaign's name and
// description.
const (
	MaxNameLength       = 200
	MaxDescriptionBytes = 64 << 10
)

// Size bounds a campaign's points and tasks (0: no bound).
type Size struct{ Points, Tasks int64 }

// TooLargeError is PlanWithin's refusal of a sweep past its Size: its
// points (the product of its axes' lengths and its policy variants) and
// tasks, counted before any point is planned.
type TooLargeError struct {
	Points, Tasks, Replications int64
	Max                         Size
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%d points, %d tasks: more than %d points or %d tasks", e.Points, e.Tasks, e.Max.Points, e.Max.Tasks)
}

// PlanWithin is Plan refusing a campaign larger than max before planning
// any point: the points are the product of the axes' lengths and the
// policy variants, known once they are read. Counted after planning, a
// 40 KB sweep of two 3000-value axes (9·10^6 points) planned for minutes,
// growing, before it was refused.
func PlanWithin(f *File, cat Catalog, max Size) (*Campaign, error) {
	c, err := planFile(f, cat, max)
	if err != nil {
		if tl, ok := errors.AsType[*TooLargeError](err); ok {
			return nil, tl
		}
		return nil, f.src.locate(err)
	}
	return c, nil
}

// size is the points and tasks of axes × pols × reps, saturating at
// MaxInt64.
func size(axes []axis, pols int, reps int) (points, tasks int64) {
	mul := func(a, b int64) int64 {
		if b != 0 && a > math.MaxInt64/b {
			return math.MaxInt64
		}
		return a * b
	}
	points = int64(pols)
	for _, a := range axes {
		points = mul(points, int64(len(a.values)))
	}
	return points, mul(points, int64(reps))
}

// PolicyLister is an optional extension of a Catalog that lists the
// policies it knows, so that a misspelt policy gets the nearest names
// ("did you mean").
type PolicyLister interface {
	PolicyNames() []string
}

// visible reports whether s has a character that shows: not a space nor
// a format character (U+200B, a zero-width space, is one).
func visible(s string) bool {
	for _, r := range s {
		if unicode.IsGraphic(r) && !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r) {
			return true
		}
	}
	return false
}

// shownText refuses, in text that terminals show (a campaign's name in
// status, logs and every command's output, on a farm the operator's too;
// its description in the report), a character a terminal acts on: C0 and
// C1 controls (newline and tab in multi-line text), DEL, bidirectional
// controls. A name written "x\e]0;pwned\ay" changed the title of every
// terminal that listed the campaign; the coordinator refuses such a spec
// from any submitter, not only from msjfarm submit.
func shownText(key, s string, multiline bool) error {
	for _, r := range s {
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if termtext.Control(r) {
			return fieldErr(key, nil, "%s holds the control character %U: it is shown on terminals, which would act on it", quoted(s), r)
		}
	}
	return nil
}

func planFile(f *File, cat Catalog, max Size) (*Campaign, error) {
	c := &Campaign{File: f}
	if f.Limit != nil {
		return nil, errLimitCampaign
	}
	if f.Name == "" {
		return nil, missingErr("name", "required: the campaign's name, e.g. name: my-sweep")
	}
	if !visible(f.Name) {
		// A name of spaces (or of zero-width characters) ran, and listed
		// as a blank NAME column that no command could name it by.
		return nil, fieldErr("name", nil, "is blank: the campaign's name, e.g. name: my-sweep")
	}
	if err := shownText("name", f.Name, false); err != nil {
		return nil, err
	}
	// Shown on every line that names the campaign (status, logs, the
	// progress line): a name of 60 MB was printed whole, one of 10^4
	// characters made status that wide.
	if n := utf8.RuneCountInString(f.Name); n > MaxNameLength {
		return nil, fieldErr("name", nil, "%d characters, more than the %d a campaign's name may have (the description is for more)", n, MaxNameLength)
	}
	if len(f.Description) > MaxDescriptionBytes {
		return nil, fieldErr("description", nil, "%d bytes, more than the %d a description may have", len(f.Description), MaxDescriptionBytes)
	}
	if err := shownText("description", f.Description, true); err != nil {
		return nil, err
	}
	if f.Replications == 0 && f.src.lacks("replications") {
		return nil, missingErr("replications", "required: independent replications per point, e.g. replications: 10")
	}
	if f.Replications < 1 {
		return nil, fmt.Errorf("replications: must be >= 1, got %d", f.Replications)
	}
	if f.Run.Arrivals == 0 && f.src.lacks("run.arrivals") {
		return nil, missingErr("run.arrivals", "required: measured arrivals per replication, e.g. run: {arrivals: 1e6}")
	}
	if err := checkRun(f.Run); err != nil {
		return nil, err
	}
	base, trace, err := baseWorkload(f)
	if err != nil {
		return nil, err
	}
	if err := checkCap(f, base.Servers); err != nil {
		return nil, err
	}
	if err := checkPrecision(f.Precision, f.Replications, base.Classes, trace != nil); err != nil {
		return nil, err
	}
	axes, err := buildAxes(f, trace != nil)
	if err != nil {
		return nil, err
	}
	pols, err := policyVariants(f.Policies, cat)
	if err != nil {
		return nil, err
	}
	if err := checkCompare(f.Compare, pols); err != nil {
		return nil, err
	}
	if err := CheckVerify(f.Verify); err != nil {
		return nil, err
	}
	c.plan = plan{cat: cat, base: base, trace: trace, axes: axes, pols: pols}
	if pts, tasks := size(axes, len(pols), f.Replications); max.Points > 0 && pts > max.Points || max.Tasks > 0 && tasks > max.Tasks {
		return nil, &TooLargeError{Points: pts, Tasks: tasks, Replications: int64(f.Replications), Max: max}
	}
	if err := c.walk(func(vals map[string]any) error {
		return c.addPoint(f, cat, base, trace, vals, pols, nil)
	}); err != nil {
		return nil, err
	}
	if trace != nil && f.Replications > 1 {
		// A reader took n identical replications' ±0 and p = 0 for a
		// sampling interval and a significant difference.
		c.Warnings = append(c.Warnings, fmt.Sprintf("trace: a replayed trace has the same arrivals and sizes in every replication: the %d replications of a policy that makes no random choice are identical, and their ±0 intervals and p = 0 comparisons describe this one trace, not a sampling distribution", f.Replications))
	}
	// The duplicate and workload checks are done: their maps are not
	// needed to generate the tasks.
	c.scenarios, c.checked = nil, nil
	if c.ID, err = hashHex(f, 16); err != nil {
		return nil, fmt.Errorf("sweep file: %w", err)
	}
	warns, err := checkOtherProfiles(f, cat)
	if err != nil {
		return nil, err
	}
	c.Warnings = append(c.Warnings, warns...)
	return c, nil
}

// checkRun validates the run block by the engine's rules
// (wire.RunConfig.Validate, naming the field) and the deadline.
func checkRun(r RunSpec) error {
	if err := r.Validate(); err != nil {
		return err
	}
	// The engine accepts an infinite series_interval (no samples), but no
	// task holding one can be encoded or hashed.
	if math.IsInf(r.SeriesInterval, 0) {
		return fmt.Errorf("run.series_interval: must be finite, got %v", r.SeriesInterval)
	}
	if err := checkMagnitude("run.series_interval", r.SeriesInterval); err != nil {
		return err
	}
	if r.Deadline < 0 {
		return fieldErr("run.deadline", nil, "must be >= 0, got %v", r.Deadline)
	}
	return nil
}

func baseWorkload(f *File) (workload.Spec, *TraceRef, error) {
	n := 0
	for _, set := range []bool{f.Workload != "", len(f.Classes) > 0, f.Trace != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return workload.Spec{}, nil, missingErr("workload", "give exactly one of workload (a name, msjfarm workloads lists them), classes (with servers), or trace")
	}
	if err := checkDistName("interarrival", f.Interarrival); err != nil {
		return workload.Spec{}, nil, err
	}
	if f.Servers < 0 || f.Servers == 0 && f.written("servers") {
		// Its own key, so that an override is named (set by
		// MSJFARM_SERVERS): it was the workload's error, at the
		// workload's line, and with a trace the header's count silently.
		return workload.Spec{}, nil, fieldErr("servers", nil, "must be >= 1 (or left out: the workload's or trace's own count), got %d", f.Servers)
	}
	if f.Servers > sim.MaxServers {
		return workload.Spec{}, nil, fieldErr("servers", nil, "must be at most %d (the most servers msjfarm simulates), got %d", sim.MaxServers, f.Servers)
	}
	switch {
	case f.Workload != "":
		if !slices.Contains(workload.Names(), f.Workload) {
			return workload.Spec{}, nil, unknownName("workload", "workload", f.Workload, workload.Names(), "msjfarm workloads lists them", "")
		}
		s, err := workload.NamedFor(f.Workload, f.Servers)
		if err != nil {
			return s, nil, fmt.Errorf("workload: %w", err)
		}
		return s, nil, nil
	case len(f.Classes) > 0:
		s, err := classesWorkload(f)
		return s, nil, err
	}
	ref, err := traceRef(f)
	if err != nil {
		return workload.Spec{}, nil, err
	}
	return workload.Spec{Name: f.Name, Servers: f.Servers}, ref, nil
}

// MaxSamples bounds the samples of the empirical service distributions of
// a file's classes, all together: at about 20 bytes a sample in a task's
// JSON, 10^4 make a task message of 200 KB.
const MaxSamples = 10_000

// classesWorkload is the system of a file's explicit classes.
func classesWorkload(f *File) (workload.Spec, error) {
	if f.Servers < 1 {
		return workload.Spec{}, missingErr("servers", "must be >= 1 with explicit classes, got %d", f.Servers)
	}
	var total float64
	samples := 0
	for i, c := range f.Classes {
		if err := checkDistName(fmt.Sprintf("classes[%d].service", i), &c.Service); err != nil {
			return workload.Spec{}, err
		}
		if samples += len(c.Service.Samples); samples > MaxSamples {
			return workload.Spec{}, fieldErr(fmt.Sprintf("classes[%d].service.samples", i), nil,
				"%d samples in the classes up to this one; at most %d in all: every task's message and result record carries its workload "+
					"(2·10^5 samples made each 3.8 MB, past the 1 MB a NATS server takes, and the campaign hung unpublished): "+
					"fit a distribution to them, or replay a trace (trace.file)", samples, MaxSamples)
		}
		if c.Need < 1 || c.Need > f.Servers {
			return workload.Spec{}, fieldErr(fmt.Sprintf("classes[%d].need", i), nil, "%d is not in [1, servers] = [1, %d]: a job cannot hold more servers than there are", c.Need, f.Servers)
		}
		// Here rather than only in the engine's check of the workload,
		// whose message had no line, column or key path.
		if !(c.Share >= 0) || math.IsInf(c.Share, 0) {
			return workload.Spec{}, fieldErr(fmt.Sprintf("classes[%d].share", i), nil, "must be a finite number >= 0 (a class's share of the arrivals; the shares are normalised), got %v", c.Share)
		}
		total += c.Share
	}
	if !(total > 0) || math.IsInf(total, 0) {
		// +Inf (1e308 twice) divided every share to 0: ρ 0, E[T] 0.
		return workload.Spec{}, fieldErr("classes", nil, "the shares sum to %v: give at least one class a share > 0 (a class without share: has share 0), their total finite", total)
	}
	return workload.Spec{Name: f.Name, Servers: f.Servers, Classes: f.Classes}, nil
}

// traceRef checks a file's trace block: the content it pins and its time
// scale (0: 1).
func traceRef(f *File) (*TraceRef, error) {
	ts := f.Trace.TimeScale
	if ts == 0 && !f.written("trace.time_scale") {
		ts = 1
	}
	if !(ts > 0) || math.IsInf(ts, 0) {
		return nil, fmt.Errorf("trace.time_scale: must be a finite number > 0, got %v", f.Trace.TimeScale)
	}
	if err := checkMagnitude("trace.time_scale", ts); err != nil {
		return nil, err
	}
	if f.Trace.SHA256 == "" {
		return nil, fmt.Errorf("trace.sha256: missing: the trace's content must be uploaded to storage first (msjfarm submit and run read trace.file and upload it); the farm never reads a path")
	}
	if !swf.ValidSHA256(f.Trace.SHA256) {
		return nil, fmt.Errorf("trace.sha256: %s is not a sha256 (64 lowercase hex digits)", quoted(f.Trace.SHA256))
	}
	if f.Trace.Size < 1 {
		return nil, fmt.Errorf("trace.size: must be the trace's size in bytes (>= 1), got %d", f.Trace.Size)
	}
	return &TraceRef{SHA256: f.Trace.SHA256, Size: f.Trace.Size, TimeScale: ts}, nil
}

func buildAxes(f *File, isTrace bool) ([]axis, error) {
	names, err := axisNamesOf(f, isTrace)
	if err != nil {
		return nil, err
	}
	out, inZip, err := zipAxes(f)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if inZip[n] {
			continue
		}
		a := axis{names: []string{n}}
		for _, v := range f.Axes[n] {
			a.values = append(a.values, []any{v})
		}
		out = append(out, a)
	}
	return out, nil
}

// axisNamesOf checks the names of the file's axes and returns them
// sorted.
func axisNamesOf(f *File, isTrace bool) ([]string, error) {
	names := make([]string, 0, len(f.Axes))
	for n := range f.Axes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		switch {
		case n == "arrival_rate" || n == "load":
			if isTrace {
				return nil, fmt.Errorf("axes.%s: a replayed trace has its own arrivals (use trace.time_scale)", n)
			}
		case n == "servers":
		case classAxis.MatchString(n):
			if err := checkClassIndex(n); err != nil {
				return nil, err
			}
		default:
			return nil, fieldErr("axes."+n, Suggest(n, axisNames), "unknown axis %s (use arrival_rate, load, servers, class[i].need, class[i].share or class[i].service.<field>)", quoted(n))
		}
		if len(f.Axes[n]) == 0 {
			return nil, fmt.Errorf("axes.%s: no values", n)
		}
	}
	if _, ok := f.Axes["arrival_rate"]; ok {
		if _, ok := f.Axes["load"]; ok {
			return nil, fmt.Errorf("axes: give arrival_rate or load, not both")
		}
	}
	return names, nil
}

// zipAxes builds the file's zip groups, each one axis whose steps
// advance its axes together, and returns the axes they hold.
func zipAxes(f *File) ([]axis, map[string]bool, error) {
	inZip := map[string]bool{}
	var out []axis
	for gi, g := range f.Zip {
		if len(g) < 2 {
			if len(g) == 1 && len(f.Zip) > 1 && !slices.ContainsFunc(f.Zip, func(g []string) bool { return len(g) != 1 }) {
				// zip: [servers, load], one group written flat.
				return nil, nil, fmt.Errorf("zip: a list of groups, each a list of two or more axes: zip: [[%s]], not zip: [%s]", strings.Join(slices.Concat(f.Zip...), ", "), strings.Join(slices.Concat(f.Zip...), ", "))
			}
			return nil, nil, fmt.Errorf("zip[%d]: a zip group needs at least two axes", gi)
		}
		a := axis{names: g}
		for _, n := range g {
			vals, ok := f.Axes[n]
			if !ok {
				return nil, nil, fmt.Errorf("zip[%d]: axis %s is not in axes", gi, quoted(n))
			}
			if inZip[n] {
				return nil, nil, fmt.Errorf("zip[%d]: axis %s is in two zip groups", gi, quoted(n))
			}
			inZip[n] = true
			if len(vals) != len(f.Axes[g[0]]) {
				return nil, nil, fmt.Errorf("zip[%d]: axes %s and %s have %d and %d values", gi, quoted(g[0]), quoted(n), len(f.Axes[g[0]]), len(vals))
			}
		}
		for i := range f.Axes[g[0]] {
			step := make([]any, len(g))
			for j, n := range g {
				step[j] = f.Axes[n][i]
			}
			a.values = append(a.values, step)
		}
		out = append(out, a)
	}
	return out, inZip, nil
}

type variant struct {
	where  string // the policies entry, e.g. "policies[1]"
	name   string
	params map[string]any
	axes   map[string]any
	// written are the parameters the entry gives (lower-cased), where
	// params has the schema's defaults too.
	written []string
	// pointHead is the start of the JSON of a point's hash, up to its
	// scenario, `{"params":<params>,"policy":<name>,"scenario":`, the
	// keys in the order encoding/json sorts them: encoded once, for
	// every point (pointHash).
	pointHead []byte
}

// pointHead is variant.pointHead for policy name with its parameters
// encoded as params.
func pointHead(name string, params []byte) ([]byte, error) {
	nj, err := json.Marshal(name)
	if err != nil {
		return nil, err
	}
	head := append([]byte(`{"params":`), params...)
	head = append(append(head, `,"policy":`...), nj...)
	return append(head, `,"scenario":`...), nil
}

// pointHash is the hash of the point of policy variant p in the scenario
// whose JSON encoding is scenario: hashHex of {"scenario": ..., "policy":
// name, "params": params}, its bytes assembled around the scenario rather
// than encoded again. Handed in as a json.RawMessage, the scenario was
// still compacted byte by byte, which took longer than encoding it.
func (p *variant) pointHash(scenario []byte) string {
	h := sha256.New()
	h.Write(p.pointHead)
	h.Write(scenario)
	h.Write([]byte{'}'})
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// policyVariants expands each policies entry: a name, or a map with "name"
// and parameters, where a list value is an axis over that parameter.
func policyVariants(entries []any, cat Catalog) ([]variant, error) {
	if len(entries) == 0 {
		return nil, missingErr("policies", "at least one policy is required, e.g. policies: [fcfs] (msjfarm policies lists them)")
	}
	var out []variant
	// seen maps a policy variant (name, case-folded as the catalogue looks
	// it up, and resolved parameters) to the entry that first produced it:
	// two entries producing the same variant would produce the same task
	// ids twice, and a campaign counting them would wait for ever.
	seen := map[string]string{}
	for i, e := range entries {
		where := fmt.Sprintf("policies[%d]", i)
		name, raw, err := policyEntry(where, e)
		if err != nil {
			return nil, err
		}
		schema, err := cat.Schema(name)
		if err != nil {
			return nil, unknownPolicy(where, e, name, cat, err)
		}
		if err := unknownParams(where, name, raw, schema); err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(raw))
		for k := range raw {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		combos, err := paramCombos(where, keys, raw)
		if err != nil {
			return nil, err
		}
		for _, m := range combos {
			v, err := resolveVariant(where, name, schema, raw, keys, m, seen)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// policyEntry reads one policies entry: its name and its parameters,
// their keys lower-cased.
func policyEntry(where string, e any) (string, map[string]any, error) {
	raw := map[string]any{}
	switch x := e.(type) {
	case string:
		return x, raw, nil
	case map[string]any:
		n, ok := x["name"].(string)
		if !ok || n == "" {
			return "", nil, fmt.Errorf("%s: a policy entry needs a name", where)
		}
		for k, v := range x {
			if k != "name" {
				raw[strings.ToLower(k)] = v
			}
		}
		return n, raw, nil
	}
	return "", nil, fieldErr(where, nil, "want a policy name or a map with name and parameters, got %s", valueWord(e))
}

// paramCombos crosses an entry's parameters, keys in order: a list value
// is an axis over the parameter, any other value one step.
func paramCombos(where string, keys []string, raw map[string]any) ([]map[string]any, error) {
	combos := []map[string]any{{}}
	for _, k := range keys {
		vals, isList := raw[k].([]any)
		if !isList {
			vals = []any{raw[k]}
		}
		if len(vals) == 0 {
			return nil, fmt.Errorf("%s.%s: empty list", where, k)
		}
		next := make([]map[string]any, 0, len(combos)*len(vals))
		for _, m := range combos {
			for _, v := range vals {
				mm := make(map[string]any, len(m)+1)
				for a, b := range m {
					mm[a] = b
				}
				mm[k] = v
				next = append(next, mm)
			}
		}
		combos = next
	}
	return combos, nil
}

// resolveVariant resolves one combination m of an entry's parameters
// against the policy's schema, rejects a variant an earlier entry (or
// combination) already produced, and records it in seen.
func resolveVariant(where, name string, schema []sim.Param, raw map[string]any, keys []string, m map[string]any, seen map[string]string) (variant, error) {
	numberParams(schema, m)
	resolved, err := sim.Resolve(schema, m)
	if err != nil {
		// sim.Resolve says `parameter "threshold": ...`: the error
		// is placed at that parameter of the entry.
		at := where
		if m := paramInError.FindStringSubmatch(err.Error()); m != nil {
			if _, given := raw[strings.ToLower(m[1])]; given {
				at = where + "." + strings.ToLower(m[1])
			}
		}
		return variant{}, fieldErr(at, nil, "policy %s: %v", name, err)
	}
	pj, err := json.Marshal(resolved)
	if err != nil {
		return variant{}, fmt.Errorf("%s (%s): %w", where, name, err)
	}
	head, err := pointHead(name, pj)
	if err != nil {
		return variant{}, fmt.Errorf("%s (%s): %w", where, name, err)
	}
	key, err := json.Marshal(map[string]any{"policy": strings.ToLower(name), "params": json.RawMessage(pj)})
	if err != nil {
		return variant{}, fmt.Errorf("%s (%s): %w", where, name, err)
	}
	if first, dup := seen[string(key)]; dup {
		return variant{}, fmt.Errorf("%s: %s with parameters %s duplicates %s: list each policy variant once", where, name, paramLabel(resolved), first)
	}
	seen[string(key)] = where
	ax := map[string]any{}
	for _, k := range keys {
		if _, isList := raw[k].([]any); isList {
			ax[k] = m[k]
		}
	}
	return variant{where: where, name: name, params: resolved, axes: ax, written: keys, pointHead: head}, nil
}

// numberParams reads, in one combination m of an entry's parameters, a
// number written as text ("16") for a parameter its schema types as a
// number, as the rest of a sweep file reads one (an axis value,
// arrivals: "1e5"): arrival_rate: ["1"] was taken and threshold: "1"
// refused. The whole text is the number; text that is not one is left
// for sim.Resolve to refuse, quoted. The value read replaces the text, so
// the variant, its tasks and their ids are those of the number written
// bare (no campaign held the text: it was refused).
func numberParams(schema []sim.Param, m map[string]any) {
	for k, v := range m {
		text, ok := v.(string)
		if !ok {
			continue
		}
		for _, p := range schema {
			if !strings.EqualFold(p.Name, k) || p.Type != sim.Int && p.Type != sim.Float {
				continue
			}
			if x, err := strconv.ParseFloat(text, 64); err == nil { // as an axis value is read (toFloat)
				m[k] = x
			}
		}
	}
}

// unknownPolicy is the error of a policy the catalogue does not know:
// the nearest names when the catalogue lists its policies and one is near,
// else the catalogue's own error (which says where plugins were searched).
func unknownPolicy(where string, entry any, name string, cat Catalog, err error) error {
	if _, isMap := entry.(map[string]any); isMap {
		where += ".name"
	}
	if len(name) > maxQuoted {
		// No policy's name is that long, and the catalogue's own error
		// quotes it whole (a 50 MB name made a 50 MB error).
		return fieldErr(where, nil, "unknown policy %s (msjfarm policies lists them)", quoted(name))
	}
	if l, ok := cat.(PolicyLister); ok {
		names := l.PolicyNames()
		if !slices.Contains(names, strings.ToLower(name)) {
			if e := unknownName(where, "policy", name, names, "", "msjfarm policies lists them"); len(e.Suggest) > 0 {
				return e
			}
		}
	}
	return fieldErr(where, nil, "%v", err)
}

// unknownParams names a parameter the policy's schema does not have, with
// the nearest parameter names; the schema's other checks (type, range) are
// sim.Resolve's.
func unknownParams(where, name string, raw map[string]any, schema []sim.Param) error {
	names := make([]string, len(schema))
	for i, p := range schema {
		names[i] = strings.ToLower(p.Name)
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if slices.Contains(names, k) {
			continue
		}
		if len(names) == 0 {
			return fieldErr(where+"."+k, nil, "unknown parameter %s: policy %s takes no parameters", quoted(k), name)
		}
		return unknownName(where+"."+k, "parameter", k, names, "policy "+name+"'s parameters", "")
	}
	return nil
}

// paramLabel formats resolved parameters for an error message.
func paramLabel(p map[string]any) string {
	if len(p) == 0 {
		return "(none)"
	}
	b, _ := json.Marshal(p)
	return string(b)
}

// toFloat reads an axis value: a finite number (NaN and ±Inf are not
// values any axis can take, and no task holding one can be hashed).
func toFloat(where string, v any) (float64, error) {
	var f float64
	switch x := v.(type) {
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint64:
		f = float64(x)
	case float64:
		f = x
	case string:
		var err error
		if f, err = strconv.ParseFloat(x, 64); err != nil {
			return 0, fmt.Errorf("%s: %v is not a number", where, v)
		}
	default:
		return 0, fmt.Errorf("%s: %v is not a number", where, v)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s: %v is not a finite number", where, v)
	}
	return f, nil
}

// applyAxis sets one axis value on the scenario.
func applyAxis(s *workload.Spec, rate *float64, load *float64, name string, v any) error {
	where := "axes." + name
	x, err := toFloat(where, v)
	if err != nil {
		return err
	}
	switch name {
	case "arrival_rate":
		*rate = x
		return nil
	case "load":
		*load = x
		return nil
	case "servers":
		if x != math.Trunc(x) || x < 1 || x > math.MaxInt32 {
			e := fieldErr(where, nil, "%v is not a whole number in [1, 2³¹)", v)
			e.num = &x
			return e
		}
		s.Servers = int(x)
		return nil
	}
	return applyClassAxis(s, where, name, v, x)
}

// checkClassIndex refuses a class[i] axis whose index is not written
// the one way, without leading zeros: class[00].share is the axis of
// class 0, and beside class[0].share it was one class's share swept twice,
// one of them silently ignored (alone, it was another campaign id than
// class[0].share for the same campaign).
func checkClassIndex(name string) error {
	m := classAxis.FindStringSubmatch(name)
	if len(m[1]) > 1 && m[1][0] == '0' {
		canon := "class[" + strings.TrimLeft(m[1], "0")
		if canon == "class[" {
			canon += "0"
		}
		canon += "]." + m[2]
		return fieldErr("axes."+name, nil, "class index %s has leading zeros: write %s (two spellings of one class's index would name one axis twice, and give the campaign another id)", quoted(m[1]), canon)
	}
	return nil
}

// classRange is the class indices of a workload of n classes, as an
// axis writes them: ", class[0] to class[n-1]".
func classRange(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return ", class[0]"
	}
	return fmt.Sprintf(", class[0] to class[%d]", n-1)
}

// applyClassAxis sets a class[i].<field> axis value x on the scenario.
func applyClassAxis(s *workload.Spec, where, name string, v any, x float64) error {
	m := classAxis.FindStringSubmatch(name)
	i, err := strconv.Atoi(m[1])
	if err != nil || i >= len(s.Classes) {
		// Past int's range Atoi gave its largest value, and the error
		// said "class 9223372036854775807".
		return fieldErr(where, nil, "class %s does not exist: the index is out of range (the workload has %d classes%s)", termtext.Clip(m[1], maxQuoted), len(s.Classes), classRange(len(s.Classes)))
	}
	c := &s.Classes[i]
	if m[2] == "need" {
		if x != math.Trunc(x) || x < 1 || x > math.MaxInt32 {
			e := fieldErr(where, nil, "%v is not a whole number in [1, 2³¹)", v)
			e.num = &x
			return e
		}
		c.Need = int(x)
		return nil
	}
	if m[2] == "share" {
		// Here, with its key: the engine's check of the workload said
		// so without a line.
		if !(x >= 0) || math.IsInf(x, 0) {
			e := fieldErr(where, nil, "%v: a share must be a finite number >= 0", v)
			e.num = &x // placed at the list's element, not its "["
			return e
		}
		c.Share = x
		return nil
	}
	if f := serviceField(&c.Service, strings.TrimPrefix(m[2], "service.")); f != nil {
		*f = &x
	}
	return nil
}

// serviceField is the field of a service distribution a
// class[i].service.<name> axis sets (nil: none of them).
func serviceField(d *dist.Spec, name string) **float64 {
	return map[string]**float64{"mean": &d.Mean, "scv": &d.SCV, "low": &d.Low, "high": &d.High,
		"alpha": &d.Alpha, "shape": &d.Shape, "scale": &d.Scale}[name]
}

func cloneSpec(s workload.Spec) workload.Spec {
	out := s
	out.Classes = append([]workload.ClassSpec(nil), s.Classes...)
	return out
}

// addPoint builds the scenario at axis values vals. Without emit it
// validates it (Plan: duplicate scenarios, the workload checks, notes)
// and counts its points; with emit it generates its tasks, in order.
func (c *Campaign) addPoint(f *File, cat Catalog, base workload.Spec, trace *TraceRef, vals map[string]any, pols []variant, emit func(Task) error) error {
	validate := emit == nil
	spec, rate, load, err := scenarioSpec(f, base, vals)
	if err != nil {
		return err
	}
	label := pointLabel(vals)
	if trace == nil {
		if rate, load, err = pointRate(f, spec, vals, label, rate, load); err != nil {
			return err
		}
		if validate {
			c.notePoint(f, spec, vals, label, load)
		}
	} else if spec.Servers < 1 {
		spec.Servers = 0 // the trace header's MaxProcs, resolved by the reader
	}
	ia, err := interarrival(f)
	if err != nil {
		return err
	}
	// The scenario is encoded once: its hash, its seeds' and each policy's
	// point hash hold the same bytes, and encoding it (the workload's
	// classes) three times a point was a third of the time a sweep of 10⁶
	// points took to plan (newSeedDeriver, pointHash).
	scenario, err := json.Marshal(map[string]any{"workload": spec, "arrival_rate": rate, "interarrival": ia, "trace": trace})
	if err != nil {
		return fmt.Errorf("point %s: %w", label, err)
	}
	scenarioID := hashOf(scenario, 16)
	if validate {
		if err := c.checkScenario(cat, scenarioID, spec, rate, ia, trace, pols, label); err != nil {
			return err
		}
	}
	var seeds *seedDeriver
	if !validate {
		seeds = newSeedDeriver(f.Seed, scenario)
	}
	for _, p := range pols {
		tmpl := Task{Scenario: scenarioID, Workload: spec, ArrivalRate: rate, Interarrival: ia,
			Trace: trace, Policy: p.name, Params: p.params, Run: f.Run, Axes: pointAxes(vals, p), Load: load}
		tmpl.Point = p.pointHash(scenario)
		ids, err := newIDHasher(tmpl)
		if err != nil {
			return fmt.Errorf("point %s: policy %s: a task cannot be encoded (a parameter is not a finite number?)", label, p.name)
		}
		if validate {
			c.Points++
			continue
		}
		if err := emitReplications(tmpl, f.Replications, seeds, ids, emit); err != nil {
			return err
		}
	}
	return nil
}

// scenarioSpec is the system at axis values vals: the base workload (a
// workload whose classes depend on k, the Halfin–Whitt family, rebuilt
// for a swept servers value first) with every axis applied, and the
// rate or load the axes give (0 when not swept).
func scenarioSpec(f *File, base workload.Spec, vals map[string]any) (spec workload.Spec, rate, load float64, err error) {
	spec = cloneSpec(base)
	if v, ok := vals["servers"]; ok && f.Workload != "" && workload.Scaled(f.Workload) {
		x, err := toFloat("axes.servers", v)
		if err != nil {
			return spec, 0, 0, err
		}
		if x != math.Trunc(x) || x < 1 || x > math.MaxInt32 {
			return spec, 0, 0, fmt.Errorf("axes.servers: %v is not a whole number in [1, 2³¹)", v)
		}
		if spec, err = workload.NamedFor(f.Workload, int(x)); err != nil {
			return spec, 0, 0, fmt.Errorf("axes.servers: %w", err)
		}
	}
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := applyAxis(&spec, &rate, &load, n, vals[n]); err != nil {
			return spec, 0, 0, err
		}
	}
	return spec, rate, load, nil
}

// notPositive is the error of a point whose arrival rate or load is not
// > 0, at the axis that gives it and the list's element that holds the
// value (it was placed at "axes", the value left to be found).
func notPositive(vals map[string]any, label string) error {
	for _, name := range []string{"arrival_rate", "load"} {
		if v, ok := vals[name]; !ok {
			continue
		} else if x, err := toFloat(name, v); err == nil && !(x > 0) {
			e := fieldErr("axes."+name, nil, "point %s: arrival rate and load must be > 0", label)
			e.num = &x
			return e
		}
	}
	return fmt.Errorf("axes: point %s: arrival rate and load must be > 0", label)
}

// pointRate checks a generated-arrivals point's system and returns its
// arrival rate and offered load, the one derived from the other the axes
// gave, each within the magnitudes msjfarm accepts.
func pointRate(f *File, spec workload.Spec, vals map[string]any, label string, rate, load float64) (float64, float64, error) {
	if rate == 0 && load == 0 {
		_, r := vals["arrival_rate"]
		_, l := vals["load"]
		if r || l {
			// An axis value of 0: said as such, where "give
			// arrival_rate or load" read as if the axis were missing.
			return 0, 0, notPositive(vals, label)
		}
		return 0, 0, fmt.Errorf("axes: give arrival_rate or load (point %s)", label)
	}
	if rate < 0 || load < 0 {
		return 0, 0, notPositive(vals, label)
	}
	unit, err := spec.Build(1)
	if err != nil {
		return 0, 0, fmt.Errorf("point %s: %w", label, err)
	}
	if err := checkMeans(spec, unit); err != nil {
		return 0, 0, fmt.Errorf("point %s: %w", label, err)
	}
	if err := checkClassRanges(f, spec, vals); err != nil {
		return 0, 0, fmt.Errorf("point %s: %w", label, err)
	}
	if load > 0 {
		rate = load / unit.Load()
	}
	load = rate * unit.Load()
	_, loadGiven := vals["load"]
	if loadGiven {
		if err := checkMagnitude("axes.load", load); err != nil {
			return 0, 0, fmt.Errorf("point %s: %w", label, err)
		}
	}
	if err := checkMagnitude("axes.arrival_rate", rate); err != nil {
		if loadGiven {
			err.(*Error).Path = "axes.load"
			err.(*Error).Msg = fmt.Sprintf("gives the arrival rate %v, outside [%g, %g], the range of rates msjfarm accepts", rate, MinMagnitude, MaxMagnitude)
		}
		return 0, 0, fmt.Errorf("point %s: %w", label, err)
	}
	// A finite rate or load can still overflow through the other (a
	// load of 0.5 with service means of 1e-300 is a rate of 5e299 per
	// time unit times the servers): name the axis that was given.
	if !(rate > 0) || math.IsInf(rate, 0) || math.IsInf(load, 0) {
		field := "arrival_rate"
		if loadGiven {
			field = "load"
		}
		return 0, 0, fmt.Errorf("axes.%s: point %s: arrival rate %v and offered load %v are out of range for this workload", field, label, rate, load)
	}
	return rate, load, nil
}

// notePoint adds the campaign's warnings about a valid point: shares the
// user wrote (explicit classes or a share axis) that do not sum to 1 —
// a named workload's shares are the paper's rounded table, normalised by
// definition — once per distinct total, and an offered load ≥ 1.
func (c *Campaign) notePoint(f *File, spec workload.Spec, vals map[string]any, label string, load float64) {
	if sum := shareSum(spec); userShares(f, vals) && math.Abs(sum-1) > 1e-9 {
		key := fmt.Sprintf("%.6g", sum)
		if c.shareNotes == nil {
			c.shareNotes = map[string]bool{}
		}
		if !c.shareNotes[key] {
			c.shareNotes[key] = true
			c.Warnings = append(c.Warnings, fmt.Sprintf("point %s: class shares sum to %s, not 1: they are normalised (each divided by %s)", label, key, key))
		}
	}
	if load >= 1 {
		c.Warnings = append(c.Warnings, fmt.Sprintf("point %s: offered load %.4g >= 1: no policy can be stable; results will be flagged", label, load))
	}
}

// interarrival is the file's checked inter-arrival law (nil: Poisson).
func interarrival(f *File) (*dist.Spec, error) {
	if err := checkDistRanges("interarrival", f.Interarrival); err != nil {
		return nil, err
	}
	if f.Interarrival == nil {
		return nil, nil
	}
	if _, err := f.Interarrival.Build(); err != nil {
		return nil, fmt.Errorf("interarrival: %w", err)
	}
	return f.Interarrival, nil
}

// checkScenario rejects a scenario that repeats an earlier one — two
// axis values that make the same scenario (arrival_rate: [1, 1.0], or
// load and servers steps that land on the same system) would give the
// same task ids twice, and the campaign would wait for ever — and tries
// the policy variants on its system when the catalogue can.
func (c *Campaign) checkScenario(cat Catalog, scenarioID string, spec workload.Spec, rate float64, ia *dist.Spec, trace *TraceRef, pols []variant, label string) error {
	if c.scenarios == nil {
		c.scenarios = map[string]string{}
	}
	if prev, dup := c.scenarios[scenarioID]; dup {
		return fmt.Errorf("axes: points %s and %s are the same scenario: list each axis value once", prev, label)
	}
	c.scenarios[scenarioID] = label
	wc, ok := cat.(WorkloadChecker)
	switch {
	case !ok:
		return nil
	case trace == nil:
		system := map[string]any{"servers": spec.Servers, "classes": spec.Classes, "interarrival": ia}
		try := wc.CheckWorkload
		if sc, ok := wc.(SpecChecker); ok {
			try = func(policy string, params map[string]any, w *sim.Workload) error {
				return sc.CheckSpec(policy, params, spec, rate, ia, w)
			}
		}
		return c.checkVariants(try, system, func() (*sim.Workload, error) { return spec.BuildArrivals(rate, ia, nil) }, pols, label)
	}
	// A replayed trace is tried too when it was read here: without this a
	// policy the trace's widths rule out (MSFQ on anything but one-or-all)
	// was accepted, and each of its tasks failed on a worker.
	if c.File.Trace == nil || c.File.Trace.local == nil {
		return nil
	}
	system := map[string]any{"servers": spec.Servers, "trace": trace}
	return c.checkVariants(wc.CheckWorkload, system, func() (*sim.Workload, error) { return c.traceWorkload(spec, trace) }, pols, label)
}

// pointAxes are a point's values of the swept axes: the scenario's and
// the policy variant's parameters.
func pointAxes(vals map[string]any, p variant) map[string]any {
	axes := make(map[string]any, len(vals)+len(p.axes))
	for k, v := range vals {
		axes[k] = v
	}
	for k, v := range p.axes {
		axes[k] = v
	}
	return axes
}

// emitReplications emits the replications of the point tmpl, in order.
func emitReplications(tmpl Task, reps int, seeds *seedDeriver, ids *idHasher, emit func(Task) error) error {
	for r := 0; r < reps; r++ {
		t := tmpl
		t.Replication, t.Seed = r, seeds.seed(r)
		t.ID = ids.id(r, t.Seed)
		if err := emit(t); err != nil {
			return err
		}
	}
	return nil
}

func pointLabel(vals map[string]any) string {
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s=%v", n, vals[n])
	}
	if len(parts) == 0 {
		return "(no axes)"
	}
	return strings.Join(parts, ",")
}

// minMean is the smallest service mean a class may have: below the smallest
// normal float64 the reciprocal (the service rate) overflows to +Inf, and
// sampled sizes underflow to 0.
const minMean = 0x1p-1022

// checkMeans rejects a class whose service mean is a subnormal number
// (service: {mean: 1e-320}), which the distribution accepts as > 0 but no
// engine arithmetic survives.
func checkMeans(spec workload.Spec, w *sim.Workload) error {
	for i, c := range w.Classes {
		if m := c.Service.Mean(); m < minMean {
			return fieldErr(fmt.Sprintf("classes[%d].service.mean", i), nil, "%v is below %v, the smallest mean the engine can sample", m, minMean)
		}
	}
	return nil
}

// shareSum is the total of the class shares, which the engine normalises
// (sim.Workload): a total other than 1 is accepted with a warning.
func shareSum(spec workload.Spec) float64 {
	var t float64
	for _, c := range spec.Classes {
		t += c.Share
	}
	return t
}

// userShares reports whether the class shares at a point were written in
// the sweep file: explicit classes, or a class[i].share axis.
func userShares(f *File, vals map[string]any) bool {
	if len(f.Classes) > 0 {
		return true
	}
	for n := range vals {
		if strings.HasSuffix(n, "].share") {
			return true
		}
	}
	return false
}

// checkVariants tries every policy variant on the point's system (what
// build makes; system identifies it) through try (the catalogue's
// WorkloadChecker or SpecChecker), naming the policy entry and the point.
// The arrival rate does not change what a policy accepts, so each system
// is checked once.
func (c *Campaign) checkVariants(try func(string, map[string]any, *sim.Workload) error, system map[string]any, build func() (*sim.Workload, error), pols []variant, label string) error {
	if c.checked == nil {
		c.checked = map[string]bool{}
	}
	var w *sim.Workload
	for _, p := range pols {
		system["policy"], system["params"] = p.name, p.params
		key, err := json.Marshal(system)
		if err != nil {
			return fmt.Errorf("point %s: policy %s: %w", label, p.name, err)
		}
		if c.checked[string(key)] {
			continue
		}
		if w == nil {
			if w, err = build(); err != nil {
				return fmt.Errorf("point %s: %w", label, err)
			}
		}
		if err := try(p.name, p.params, w); err != nil {
			// Placed at a parameter the entry gives and the policy's
			// message names ("threshold 300 out of range"), else at the
			// entry: a joint bound's message names a parameter left at its
			// default too, and `{name: killsmart, nu: 200000}` was placed
			// at policies[0].k, which the file does not have.
			at := p.where
			for _, k := range p.written {
				if regexp.MustCompile(`(?i)\b` + regexp.QuoteMeta(k) + `\b`).MatchString(err.Error()) {
					at = p.where + "." + k
					break
				}
			}
			return fieldErr(at, nil, "point %s: %v", label, err)
		}
		c.checked[string(key)] = true
	}
	return nil
}
