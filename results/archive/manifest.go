package archive

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/report"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// Manifest is campaigns/<id>/manifest.json: what is needed to reproduce
// any number of the campaign.
type Manifest struct {
	// Version is the manifest's schema: 2 since the manifest no longer
	// lists every task (Seeds) but their number and TaskListSHA256; absent
	// (0) in the manifests of version 1, which readers still accept.
	Version  int    `json:"manifest_version,omitempty"`
	Campaign string `json:"campaign"`
	Name     string `json:"name"`
	State    string `json:"state"`
	// MsjfarmVersion is the coordinator's engine version (sim.Version);
	// each policy entry names the engine its results came from.
	MsjfarmVersion string    `json:"msjfarm_version"`
	Created        time.Time `json:"created"`
	Updated        time.Time `json:"updated"`
	Finished       time.Time `json:"finished,omitzero"`
	Tasks          int       `json:"tasks"`
	Points         int       `json:"points"`
	Done           int       `json:"done"`
	Failed         int       `json:"failed"`
	Replications   int       `json:"replications"`
	// Seed is the campaign seed; SeedDerivation says how each task's seed
	// follows from it (so the sweep and the seed pin every task).
	Seed           uint64 `json:"seed"`
	SeedDerivation string `json:"seed_derivation"`
	// TaskListSHA256 is the sha256 of the campaign's task ids in order, one
	// per line ("<id>\n"; sweep.Campaign.TaskListHash, with the
	// replications a precision campaign added): a 10^6-task campaign's
	// list made a 169 MB manifest, so version 2 records this and Tasks
	// instead, and readers generate the list again from the sweep.
	TaskListSHA256 string `json:"task_list_sha256,omitempty"`
	// PointOrder are the point ids in campaign order: a reader that cannot
	// expand the sweep (a policy it does not know) orders the records by
	// it and by replication.
	PointOrder []string `json:"point_order,omitempty"`
	// Seeds listed every task in manifests of version 1 (read, never
	// written).
	Seeds    []TaskSeed          `json:"seeds,omitempty"`
	Policies []PolicyProvenance  `json:"policies,omitempty"`
	Hosts    []string            `json:"hosts,omitempty"`
	Warnings []string            `json:"warnings,omitempty"`
	Sweep    *sweep.File         `json:"sweep"`
	Layout   map[string]string   `json:"nats_layout"`
	Storage  string              `json:"storage"`
	Extra    map[string][]string `json:"extra,omitempty"`
	// Precision is the outcome of precision mode (sweep precision block):
	// per point, the replications it ended with and whether it met the
	// target or hit max_replications. Also in precision.csv.
	Precision *PrecisionSummary `json:"precision,omitempty"`
	// Report is the storage prefix of the rendered report (index.html,
	// plots, summary.csv/json, manifest.json), once finished.
	Report string `json:"report,omitempty"`
	// Plugins is the plugin binary each policy is pinned to when the
	// campaign runs with plugin runners (see plugins.go).
	Plugins PluginPins `json:"plugins,omitempty"`
	// ChecksumsSHA256 is the sha256 of the campaign's checksums object
	// (storage.ChecksumsKey: the sha256 of every result object at
	// finalisation, see checksums.go); empty until it finalises.
	ChecksumsSHA256 string `json:"checksums_sha256,omitempty"`
	// Verify is the campaign's spot-verification fraction (submit
	// --verify, protocol.CampaignState.Verify). It was only in the
	// campaign's entry in NATS, which anyone with the farm's NATS
	// credentials may write: a campaign rebuilt from its manifest when
	// that entry is unusable or lies ran unverified. nil in manifests
	// written before it was recorded (0 is written as 0).
	Verify *float64 `json:"verify,omitempty"`
}

// ManifestVersion is the version of the manifests this code writes.
const ManifestVersion = 2

// TaskSeed pins one task (manifest version 1).
type TaskSeed struct {
	Task        string `json:"task"`
	Point       string `json:"point"`
	Policy      string `json:"policy"`
	Replication int    `json:"replication"`
	Seed        uint64 `json:"seed"`
}

// PolicyProvenance is one (policy, code) pair seen in the results.
type PolicyProvenance struct {
	Policy        string `json:"policy"`
	Runner        string `json:"runner,omitempty"`
	Plugin        string `json:"plugin,omitempty"`
	PluginVersion string `json:"plugin_version,omitempty"`
	PluginSHA256  string `json:"plugin_sha256,omitempty"`
	Engine        string `json:"engine,omitempty"`
	Results       int    `json:"results"`
}

// PluginPins maps each policy of a campaign run with plugin runners to the
// plugin binary it is pinned to (name, version, engine, sha256 and storage
// key of the binary).
type PluginPins = map[string]protocol.PluginPin

// PrecisionKey is the storage key of a precision campaign's per-point
// outcome table.
func PrecisionKey(id string) string { return storage.CampaignPrefix(id) + "precision.csv" }

// PointPrecision is the precision outcome of one point (manifest.json
// "precision.points", one row of precision.csv).
type PointPrecision struct {
	Point        string         `json:"point"`
	Policy       string         `json:"policy"`
	Params       map[string]any `json:"params"`
	Axes         map[string]any `json:"axes"`
	Replications int            `json:"replications"`
	// N, Mean, HalfWidth, RelHalfWidth: the metric over the replications
	// that measured it (null when undefined or unbounded).
	N            int      `json:"n"`
	Mean         *float64 `json:"mean"`
	HalfWidth    *float64 `json:"hw"`
	RelHalfWidth *float64 `json:"rel_hw"`
	Status       string   `json:"status"`
}

// PrecisionSummary is manifest.json's "precision": the rule and its
// outcome per point.
type PrecisionSummary struct {
	sweep.Precision
	Initial int `json:"initial_replications"`
	// Counts of points by status.
	Met       int              `json:"met"`
	Capped    int              `json:"max_replications_reached"`
	Unstable  int              `json:"unstable"`
	Undefined int              `json:"undefined"`
	Pending   int              `json:"pending"`
	Points    []PointPrecision `json:"points"`
}

// PrecisionColumns are the columns of precision.csv, one row per point in
// sweep order:
//
//	point             point id (as in summary.csv)
//	policy, params    policy name and resolved parameters (JSON)
//	axes              the point's axis values (JSON object)
//	replications      replications the point ended with (initial + added)
//	metric            the precision metric (summary.csv column stem)
//	n                 replications that measured it
//	mean, hw          its mean and 95% half-width over them
//	rel_hw            hw / |mean| (stats.Summary.RelHalfWidth)
//	target            precision.rel_half_width
//	max_replications  precision.max_replications
//	status            met | max_replications | unstable | undefined | pending
//
// Numbers use aggregate.FormatFloat (empty = undefined, inf = unbounded).
var PrecisionColumns = []string{"point", "policy", "params", "axes", "replications", "metric", "n",
	"mean", "hw", "rel_hw", "target", "max_replications", "status"}

// WritePrecisionCSV writes s as precision.csv (columns: PrecisionColumns).
func WritePrecisionCSV(w io.Writer, s *PrecisionSummary) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(PrecisionColumns); err != nil {
		return err
	}
	for _, p := range s.Points {
		params, _ := json.Marshal(p.Params)
		axes, _ := json.Marshal(p.Axes)
		mean, hw, rel := math.NaN(), math.NaN(), math.NaN()
		if p.Mean != nil {
			mean = *p.Mean
		}
		if p.HalfWidth != nil {
			hw = *p.HalfWidth
		} else if p.N == 1 {
			hw = math.Inf(1)
		}
		if p.RelHalfWidth != nil {
			rel = *p.RelHalfWidth
		} else if p.N >= 1 {
			rel = math.Inf(1)
		}
		if err := cw.Write([]string{p.Point, p.Policy, string(params), string(axes), strconv.Itoa(p.Replications),
			s.Metric, strconv.Itoa(p.N), aggregate.FormatFloat(mean), aggregate.FormatFloat(hw),
			aggregate.FormatFloat(rel), aggregate.FormatFloat(s.RelHalfWidth), strconv.Itoa(s.MaxReplications),
			p.Status}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// PrecisionCSV is s as precision.csv bytes.
func PrecisionCSV(s *PrecisionSummary) []byte {
	var buf bytes.Buffer
	_ = WritePrecisionCSV(&buf, s)
	return buf.Bytes()
}

// RenderReport is report.Render (of c, with the overlaid campaigns) plus
// precision.csv for a precision campaign (prec may be nil).
func RenderReport(c report.Campaign, prec *PrecisionSummary, overlay ...report.Campaign) (map[string][]byte, error) {
	files := report.Files{}
	if err := RenderReportTo(files, c, prec, overlay...); err != nil {
		return nil, err
	}
	return files, nil
}

// RenderReportTo is RenderReport handing each file to sink as it is
// finished (report.RenderTo).
func RenderReportTo(sink report.Sink, c report.Campaign, prec *PrecisionSummary, overlay ...report.Campaign) error {
	if err := report.RenderTo(sink, c, overlay...); err != nil {
		return err
	}
	if prec != nil {
		return sink.Put("precision.csv", PrecisionCSV(prec))
	}
	return nil
}
