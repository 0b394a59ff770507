// Package schema generates the JSON Schema of sweep files
// (docs/sweep.schema.json) from the Go types that read them (sweep.File and
// the types it embeds), so that an editor with a YAML/JSON language server
// can complete and check sweep files, and so that the schema cannot drift
// from the reader: the test regenerates it and fails on any difference
// (go test ./sweep/schema -update rewrites it).
//
// The reflection gives the keys and their JSON types; what it cannot see is
// added here: the descriptions (kept in step with docs/sweep.md), the value
// forms the reader accepts beyond the Go type (a duration is a string with
// a unit; a policy is a name or a map; an axis is a list of scalars) and the
// keys a sweep file must have. The schema is a structural check: what needs
// the policy catalogue (names, parameter ranges) is still checked when the
// file is read.
package schema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
)

// ID is the schema's $id: where the repository keeps it.
const ID = "https://github.com/msjfarm/msjfarm/docs/sweep.schema.json"

// descriptions are the keys' descriptions, by Go type and field name.
var descriptions = map[string]string{
	"File":                      "A sweep file: one system, the axes to sweep, the policies, the replications and the run length (docs/sweep.md).",
	"File.Name":                 "The campaign's name; shown in reports and used to address the campaign. Required.",
	"File.Description":          "Free text shown in the report's header (what the campaign shows, where its parameters come from). Part of the campaign id when set.",
	"File.Seed":                 "Campaign seed; every replication's seed is derived from it.",
	"File.Workload":             "A named workload (msjfarm workloads). Exactly one of workload, classes (with servers) or trace.",
	"File.Servers":              "Number of servers k; required with classes; with a named workload that scales with k it rebuilds the classes for that k.",
	"File.Classes":              "Explicit job classes; needs servers.",
	"File.Interarrival":         "Renewal arrivals: this inter-arrival distribution, rescaled to mean 1/λ at every point (default Poisson).",
	"File.Trace":                "Replay an SWF trace instead of generating arrivals.",
	"File.Axes":                 "The swept values: arrival_rate, load, servers, class[i].need, class[i].share, class[i].service.<field>. Axes are crossed unless zipped.",
	"File.Zip":                  "Groups of axis names that advance together instead of being crossed (same number of values).",
	"File.Policies":             "Policy entries: a name, or a map with name and parameters (a list value is an axis over the parameter).",
	"File.Replications":         "Independent replications per point (the initial number with precision). Required.",
	"File.Run":                  "Run length of every replication.",
	"File.Precision":            "Sequential mode: add replications until the confidence interval is narrow enough.",
	"File.Limit":                "Stability-limit search instead of an arrival-rate axis: each policy variant's λ_max, searched by rounds of probe rates, each round a campaign (docs/sweep.md, Stability-limit search).",
	"File.Compare":              "Paired comparisons: every policy against this baseline at each scenario, pair by pair over the replications that share a seed (docs/sweep.md, Comparisons). Part of the campaign id when set.",
	"CompareSpec":               "The compare block: the baseline policy.",
	"CompareSpec.Baseline":      "A policy name of the file, or a variant's label (\"kill-smart K=21\") when the policy has several; default the first policy.",
	"LimitSpec":                 "The limit block: the arrival-rate bracket searched, the tolerance and the probe rates per round.",
	"LimitSpec.Lo":              "Lowest arrival rate searched (0: 0.05 × the rate at offered load 1).",
	"LimitSpec.Hi":              "Highest arrival rate searched (0: 1.5 × the rate at offered load 1).",
	"LimitSpec.RelTol":          "Stop once the bracket's hi/lo − 1 is at most this (0: the growth test's resolution at run.arrivals, 0.0225·√(10⁶/arrivals)).",
	"LimitSpec.Probes":          "Rates evaluated per round inside the bracket (0: 3); each round divides the bracket's log width by probes + 1.",
	"ClassSpec.Name":            "Optional label, used in per-class column names.",
	"ClassSpec.Need":            "Servers a job of the class holds, in [1, k].",
	"ClassSpec.Share":           "Relative weight of the class among arrivals (normalised to sum to 1).",
	"ClassSpec.Service":         "Service-time distribution.",
	"Spec.Dist":                 "Distribution name: exp, det, uniform, lognormal, hyperexp, bpareto, frechet, weibull, empirical.",
	"Spec.Mean":                 "Mean (exp, det, lognormal, hyperexp; bpareto, frechet, weibull solve a parameter from it).",
	"Spec.SCV":                  "Squared coefficient of variation (lognormal, hyperexp: >= 1).",
	"Spec.Low":                  "Lower bound (uniform, bpareto).",
	"Spec.High":                 "Upper bound (uniform, bpareto).",
	"Spec.Alpha":                "Tail index (bpareto, frechet: > 1).",
	"Spec.Shape":                "Shape (weibull).",
	"Spec.Scale":                "Scale (frechet, weibull).",
	"Spec.Samples":              "Samples resampled uniformly (empirical).",
	"TraceSpec.File":            "An SWF file (gzipped or not) on the submitting machine; a relative path is relative to the sweep file. msjfarm submit and run read it (within --max-trace-size) and upload it to storage under its sha256; the farm never reads the path.",
	"TraceSpec.SHA256":          "The trace's sha256 (64 lowercase hex digits): filled in from file, or given alone to replay a trace already in storage (traces/<sha256>).",
	"TraceSpec.Size":            "The trace's size in bytes, filled in with sha256.",
	"TraceSpec.TimeScale":       "Multiplies inter-arrival times (default 1): below 1 raises the load.",
	"RunSpec.Deadline":          "Wall-clock limit per replication, a duration with a unit (90m, 2h); a bare number is an error.",
	"RunConfig.Arrivals":        "Measured arrivals per replication (exponent form allowed: 1e7). Required (here or as MSJFARM_RUN_ARRIVALS).",
	"RunConfig.Warmup":          "Arrivals simulated and discarded before measuring.",
	"RunConfig.MSER":            "Replace the fixed warm-up by MSER-5 truncation.",
	"RunConfig.MaxInSystem":     "Stop a replication, reported truncated (not unstable), once more jobs than this are in the system (0: the engine's cap, 2^20 jobs from a 512 MiB memory budget); at least the servers, at most 2^25.",
	"RunConfig.DrainLimit":      "Extra arrivals simulated after the window while the last measured jobs wait to leave (0: arrivals, at least 1000); measured jobs still waiting then flag the run unstable.",
	"RunConfig.SeriesInterval":  "Sample the number in system every this many time units (0: off).",
	"RunConfig.SeriesMax":       "At most this many samples of the series (0: 10000).",
	"Precision.Metric":          "A summary.csv metric stem: a base metric, a per-class metric (class<i>_<name>_mean_response) or a counter counter_<name>.",
	"Precision.RelHalfWidth":    "Target relative half-width of the 95% CI (0.05 = ±5%).",
	"Precision.MaxReplications": "Cap on the replications of a point (>= replications).",
	"Precision.Batch":           "Replications added per round (default 10).",
	"File.Verify":               "Spot verification: the fraction of tasks, chosen from the seed and task id, run again on another worker and compared bit for bit (docs/security.md); --verify overrides it; never part of the campaign id.",
	"File.Profiles":             "Named overlays, one selected with --profile NAME or MSJFARM_PROFILE=NAME (docs/sweep.md, Profiles); never part of the campaign id.",
	"Profile":                   "Values laid over the file when the profile is selected: replications, run keys (merged key by key), axes (a named axis's values replaced), precision (merged key by key).",
	"Profile.Replications":      "Replications per point under this profile.",
	"Profile.Run":               "Run keys to replace; keys not named keep the file's values.",
	"Profile.Axes":              "Axes whose values this profile replaces (or adds); axes not named keep the file's values.",
	"Profile.Precision":         "Precision keys to set, merged into the file's precision block.",
}

// scalar is an axis value or a policy parameter value.
func scalar() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "number"}, {Type: "string"}, {Type: "boolean"}}}
}

// Reflect returns the schema of sweep files.
func Reflect() *jsonschema.Schema {
	r := &jsonschema.Reflector{
		RequiredFromJSONSchemaTags: true, // required keys are set below, not taken from omitempty
		LookupComment: func(t reflect.Type, field string) string {
			if field == "" {
				return descriptions[t.Name()]
			}
			return descriptions[t.Name()+"."+field]
		},
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			if t == reflect.TypeFor[time.Duration]() {
				return &jsonschema.Schema{Type: "string", Pattern: `^([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$`}
			}
			return nil
		},
	}
	s := r.Reflect(&sweep.File{})
	s.ID = ID
	s.Title = "msjfarm sweep file"
	file := s.Definitions["File"]
	file.Required = []string{"name", "policies", "replications"}
	props := file.Properties
	set := func(key string, f func(p *jsonschema.Schema)) {
		p, ok := props.Get(key)
		if !ok {
			panic("sweep.File has no key " + key) // the types changed: update this package
		}
		f(p)
	}
	set("axes", func(p *jsonschema.Schema) {
		p.AdditionalProperties = &jsonschema.Schema{Type: "array", Items: scalar(), MinItems: ptr(1)}
	})
	set("policies", func(p *jsonschema.Schema) {
		p.MinItems = ptr(1)
		p.Items = &jsonschema.Schema{OneOf: []*jsonschema.Schema{
			{Type: "string", Description: "A policy name (msjfarm policies)."},
			{
				Type:        "object",
				Description: "A policy name with parameters; a list value is an axis over the parameter.",
				Properties:  jsonschema.NewProperties(),
				Required:    []string{"name"},
				AdditionalProperties: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
					scalar(), {Type: "array", Items: scalar(), MinItems: ptr(1)}}},
			},
		}}
		p.Items.OneOf[1].Properties.Set("name", &jsonschema.Schema{Type: "string"})
	})
	set("replications", func(p *jsonschema.Schema) { p.Minimum = "1" })
	set("servers", func(p *jsonschema.Schema) { p.Maximum = json.Number(strconv.Itoa(sim.MaxServers)) })
	// Profiles are not in the JSON encoding (json:"-", so they never enter
	// the campaign id) and hence not reflected with File: add them here.
	prof := r.Reflect(&sweep.Profile{})
	for name, d := range prof.Definitions {
		if _, ok := s.Definitions[name]; !ok {
			s.Definitions[name] = d
		}
	}
	pp := s.Definitions["Profile"]
	pp.Properties.Set("axes", &jsonschema.Schema{Type: "object", Description: descriptions["Profile.Axes"],
		AdditionalProperties: &jsonschema.Schema{Type: "array", Items: scalar(), MinItems: ptr(1)}})
	if r, ok := pp.Properties.Get("replications"); ok {
		r.Minimum = "1"
	}
	// A profile's precision is merged key by key into the file's, so none
	// of its keys is required on its own.
	partial := *s.Definitions["Precision"]
	partial.Required = nil
	partial.Description = descriptions["Profile.Precision"]
	pp.Properties.Set("precision", &partial)
	props.Set("profiles", &jsonschema.Schema{Type: "object", Description: descriptions["File.Profiles"],
		AdditionalProperties: &jsonschema.Schema{Ref: "#/$defs/Profile"}})
	// verify is not in the JSON encoding either (json:"-": it changes no
	// result, so it is not in the campaign id).
	props.Set("verify", &jsonschema.Schema{Type: "number", Minimum: "0", Maximum: "1", Description: descriptions["File.Verify"]})
	set("servers", func(p *jsonschema.Schema) { p.Minimum = "1" })
	s.Definitions["ClassSpec"].Required = []string{"need", "share", "service"}
	s.Definitions["Spec"].Required = []string{"dist"}
	// trace.file is read only by the submitting client (json:"-", never
	// sent or stored): added here. A trace needs file, or the sha256 of
	// one already in storage.
	ts := s.Definitions["TraceSpec"]
	ts.Properties.Set("file", &jsonschema.Schema{Type: "string", Description: descriptions["TraceSpec.File"]})
	ts.Properties.MoveToFront("file")
	ts.AnyOf = []*jsonschema.Schema{{Required: []string{"file"}}, {Required: []string{"sha256"}}}
	if p, ok := ts.Properties.Get("sha256"); ok {
		p.Pattern = "^[0-9a-f]{64}$"
	}
	if p, ok := ts.Properties.Get("size"); ok {
		p.Minimum = "1"
	}
	s.Definitions["Precision"].Required = []string{"metric", "rel_half_width", "max_replications"}
	// The run's bounds (sim.Config.Validate): counts exact as float64, a
	// series a stored result can hold.
	run := s.Definitions["RunSpec"]
	for key, lo := range map[string]string{"arrivals": "1", "warmup": "0", "drain_limit": "0"} {
		if p, ok := run.Properties.Get(key); ok {
			p.Minimum, p.Maximum = json.Number(lo), json.Number(strconv.FormatInt(sim.MaxArrivals, 10))
		}
	}
	if p, ok := run.Properties.Get("series_max"); ok {
		p.Minimum, p.Maximum = "0", json.Number(strconv.Itoa(sim.MaxSeriesMax))
	}
	// A cap on jobs in system above this would switch off the memory
	// guard it is (sim.MaxMaxInSystem).
	if p, ok := run.Properties.Get("max_in_system"); ok {
		p.Minimum, p.Maximum = "0", json.Number(strconv.Itoa(sim.MaxMaxInSystem))
	}
	return s
}

func ptr(n uint64) *uint64 { return &n }

// Generate returns docs/sweep.schema.json: the schema, indented, with a
// final newline.
func Generate() ([]byte, error) {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // keep "<field>" and ">=" readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(Reflect()); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
