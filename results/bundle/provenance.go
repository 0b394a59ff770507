package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
)

// Build names a msjfarm binary: module version, VCS revision, Go version
// and engine version.
type Build struct {
	Module       string `json:"module"`
	Version      string `json:"version"`
	Revision     string `json:"vcs_revision,omitempty"`
	RevisionTime string `json:"vcs_time,omitempty"`
	Modified     bool   `json:"vcs_modified,omitempty"`
	Go           string `json:"go"`
	Engine       string `json:"engine"`
}

// String is "version (revision[+dirty]), engine E".
func (b Build) String() string {
	s := b.Version
	if b.Revision != "" {
		s += " (" + b.Revision
		if b.Modified {
			s += "+dirty"
		}
		s += ")"
	}
	return s + ", engine " + b.Engine
}

// Exporter is the running binary (runtime/debug.ReadBuildInfo).
func Exporter() Build {
	b := Build{Module: "github.com/msjfarm/msjfarm", Version: "(unknown)", Engine: sim.Version}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.Go, b.Version = bi.GoVersion, bi.Main.Version
	if bi.Main.Path != "" {
		b.Module = bi.Main.Path
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.RevisionTime = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// EngineUse counts the results one engine computed with one runner.
type EngineUse struct {
	Engine  string `json:"engine"`
	Runner  string `json:"runner"`
	Results int    `json:"results"`
}

// PluginProvenance is one plugin binary the campaign pinned or whose
// results it holds.
type PluginProvenance struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	// Engine is the sim.Version the plugin linked (through the SDK).
	Engine   string   `json:"engine"`
	Policies []string `json:"policies,omitempty"`
	Pinned   bool     `json:"pinned"`
	Results  int      `json:"results"`
	// Archived says whether the binary is in the archive.
	Archived bool `json:"archived"`
}

// Provenance is provenance.json: who computed what, with which code,
// where and when; and which binary wrote the archive.
type Provenance struct {
	Campaign string    `json:"campaign"`
	Name     string    `json:"name"`
	Exported time.Time `json:"exported"`
	// Exporter is the msjfarm binary that wrote the archive. Its
	// revision is a matching revision for the engine versions equal to
	// its engine (MatchingRevisions).
	Exporter Build `json:"exporter"`
	// CoordinatorEngine is the manifest's msjfarm_version (the
	// coordinator's sim.Version).
	CoordinatorEngine string    `json:"coordinator_engine"`
	Created           time.Time `json:"created"`
	Finished          time.Time `json:"finished,omitzero"`
	State             string    `json:"state"`
	// FirstStarted and LastEnded bound the results' run times.
	FirstStarted time.Time `json:"first_started,omitzero"`
	LastEnded    time.Time `json:"last_ended,omitzero"`
	Records      int       `json:"records"`
	Failures     int       `json:"failures"`
	// Engines are the engines that computed the results, by runner.
	Engines []EngineUse        `json:"engines"`
	Plugins []PluginProvenance `json:"plugins"`
	Hosts   []string           `json:"hosts"`
	// MatchingRevisions maps an engine version to a msjfarm VCS
	// revision that has it (the exporter's, when their engines agree).
	MatchingRevisions map[string]string `json:"matching_revisions,omitempty"`
	Warnings          []string          `json:"warnings,omitempty"`

	engines map[[2]string]int
	plugins map[string]*PluginProvenance
	hosts   map[string]bool
}

func newProvenance(id string, m *archive.Manifest, pins *protocol.Pins, b Build, now time.Time) *Provenance {
	p := &Provenance{Campaign: id, Name: m.Name, Exported: now.UTC(), Exporter: b, CoordinatorEngine: m.MsjfarmVersion,
		Created: m.Created, Finished: m.Finished, State: m.State,
		engines: map[[2]string]int{}, plugins: map[string]*PluginProvenance{}, hosts: map[string]bool{}}
	for _, h := range m.Hosts {
		p.hosts[h] = true
	}
	if pins != nil {
		for pol, pin := range pins.Policies {
			pp := p.plugin(pin.Plugin, pin.SHA256)
			pp.Version, pp.Engine, pp.Pinned = pin.Version, pin.Engine, true
			pp.Policies = append(pp.Policies, pol)
		}
	}
	return p
}

func (p *Provenance) plugin(name, sha string) *PluginProvenance {
	k := storage.PluginKey(name, sha)
	pp := p.plugins[k]
	if pp == nil {
		pp = &PluginProvenance{Name: name, SHA256: sha}
		p.plugins[k] = pp
	}
	return pp
}

// addRecord counts one campaign record.
func (p *Provenance) addRecord(r *record.Record) {
	pr := r.Provenance
	if pr.Host != "" {
		p.hosts[pr.Host] = true
	}
	if r.Failed() {
		p.Failures++
		return
	}
	p.Records++
	p.engines[[2]string{r.Result.Engine, pr.Runner}]++
	if pr.Runner == "plugin" && !pr.Builtin && pr.PluginSHA256 != "" && pr.Plugin != "" {
		pp := p.plugin(pr.Plugin, pr.PluginSHA256)
		pp.Results++
		if pp.Version == "" {
			pp.Version = pr.PluginVersion
		}
		if pp.Engine == "" {
			pp.Engine = pr.Engine
		}
		if !strings.Contains(","+strings.Join(pp.Policies, ",")+",", ","+r.Task.Policy+",") {
			pp.Policies = append(pp.Policies, r.Task.Policy)
		}
	}
	if !pr.Started.IsZero() {
		if p.FirstStarted.IsZero() || pr.Started.Before(p.FirstStarted) {
			p.FirstStarted = pr.Started
		}
		end := pr.Started.Add(time.Duration(pr.WallSeconds * float64(time.Second)))
		if end.After(p.LastEnded) {
			p.LastEnded = end
		}
	}
}

func (p *Provenance) markIncluded(key string) {
	if pp := p.plugins[key]; pp != nil {
		pp.Archived = true
	}
}

// finish turns the maps into sorted lists.
func (p *Provenance) finish() {
	p.Engines, p.Plugins, p.Hosts = nil, nil, nil
	for k, n := range p.engines {
		p.Engines = append(p.Engines, EngineUse{Engine: k[0], Runner: k[1], Results: n})
	}
	sort.Slice(p.Engines, func(i, j int) bool {
		a, b := p.Engines[i], p.Engines[j]
		return a.Engine+"\x00"+a.Runner < b.Engine+"\x00"+b.Runner
	})
	for _, pp := range p.plugins {
		sort.Strings(pp.Policies)
		p.Plugins = append(p.Plugins, *pp)
	}
	sort.Slice(p.Plugins, func(i, j int) bool {
		return p.Plugins[i].Name+p.Plugins[i].SHA256 < p.Plugins[j].Name+p.Plugins[j].SHA256
	})
	for h := range p.hosts {
		p.Hosts = append(p.Hosts, h)
	}
	sort.Strings(p.Hosts)
	p.MatchingRevisions = nil
	if p.Exporter.Revision != "" && !p.Exporter.Modified {
		p.MatchingRevisions = map[string]string{p.Exporter.Engine: p.Exporter.Revision}
	}
	if p.Engines == nil {
		p.Engines = []EngineUse{}
	}
	if p.Plugins == nil {
		p.Plugins = []PluginProvenance{}
	}
	if p.Hosts == nil {
		p.Hosts = []string{}
	}
}

// EngineHint says how to get the msjfarm revision the archive recorded
// for engine version engine ("" if it recorded none: the exporter had
// another engine, or was built from a modified checkout).
func (p *Provenance) EngineHint(engine string) string {
	if rev := p.MatchingRevisions[engine]; rev != "" {
		return fmt.Sprintf("msjfarm revision %s has engine %s: go install %s/cmd/msjfarm@%s", rev, engine, p.Exporter.Module, rev)
	}
	return ""
}

// roCrate is ro-crate-metadata.json (RO-Crate 1.1): the archive as a
// research object — a Dataset whose parts are the members written so far
// (the campaign's objects summarised by directory), created by a
// CreateAction whose instrument is msjfarm.
func roCrate(p *Provenance, written []Entry) []byte {
	type ref = map[string]string
	id := func(s string) ref { return ref{"@id": s} }
	files := []any{}
	parts := []any{}
	dirs := map[string]bool{}
	for _, e := range written {
		switch {
		case e.Path == FormatMember:
			continue
		case strings.HasPrefix(e.Path, StorePrefix):
			// Results and binaries by directory: a 10^4-task campaign
			// would otherwise list 2·10^4 files.
			rest := strings.TrimPrefix(e.Path, StorePrefix)
			parts := strings.SplitN(rest, "/", 3)
			d := StorePrefix + parts[0] + "/"
			if parts[0] == "campaigns" && len(parts) == 3 {
				if sub, _, ok := strings.Cut(parts[2], "/"); ok {
					d = StorePrefix + "campaigns/" + parts[1] + "/" + sub + "/"
				} else {
					files = append(files, map[string]any{"@id": e.Path, "@type": "File", "contentSize": fmt.Sprint(e.Size), "sha256": e.SHA256})
					continue
				}
			}
			dirs[d] = true
		default:
			files = append(files, map[string]any{"@id": e.Path, "@type": "File", "contentSize": fmt.Sprint(e.Size), "sha256": e.SHA256})
		}
	}
	for _, f := range files {
		parts = append(parts, id(f.(map[string]any)["@id"].(string)))
	}
	var dirList []string
	for d := range dirs {
		dirList = append(dirList, d)
	}
	sort.Strings(dirList)
	for _, d := range dirList {
		parts = append(parts, id(d))
		files = append(files, map[string]any{"@id": d, "@type": "Dataset"})
	}
	parts = append(parts, id(CitationMember))
	files = append(files, map[string]any{"@id": CitationMember, "@type": "File", "name": "Citation File Format"})
	graph := []any{
		map[string]any{"@id": "ro-crate-metadata.json", "@type": "CreativeWork",
			"conformsTo": id("https://w3id.org/ro/crate/1.1"), "about": id("./")},
		map[string]any{"@id": "./", "@type": "Dataset", "identifier": p.Campaign,
			"name":          fmt.Sprintf("msjfarm campaign %s (%s)", p.Name, p.Campaign),
			"description":   fmt.Sprintf("A msjfarm simulation campaign: %d results, their sweep, manifest, summary, %sprovenance (format %s version %d).", p.Records, held(p, written), FormatName, FormatVersion),
			"datePublished": p.Exported.Format("2006-01-02"), "hasPart": parts, "mentions": id("#run")},
		map[string]any{"@id": "#msjfarm", "@type": "SoftwareApplication", "name": "msjfarm",
			"version": p.Exporter.String(), "identifier": p.Exporter.Module},
		map[string]any{"@id": "#run", "@type": "CreateAction", "name": "campaign " + p.Campaign,
			"instrument": id("#msjfarm"), "result": id("./"),
			"startTime": p.Created.UTC().Format(time.RFC3339), "endTime": p.Finished.UTC().Format(time.RFC3339)},
	}
	graph = append(graph, files...)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	_ = enc.Encode(map[string]any{"@context": "https://w3id.org/ro/crate/1.1/context", "@graph": graph})
	return b.Bytes()
}

// held lists, each followed by ", ", the optional parts the archive's
// members (entries) hold: the report (not with --no-report) and plugin
// binaries (none when every policy is built in). The descriptions named
// both whatever the archive held.
func held(p *Provenance, entries []Entry) string {
	var report, plugins bool
	rp := StorePrefix + storage.ReportPrefix(p.Campaign)
	for _, e := range entries {
		report = report || strings.HasPrefix(e.Path, rp)
		plugins = plugins || strings.HasPrefix(e.Path, StorePrefix+"plugins/")
	}
	s := ""
	if report {
		s += "the report, "
	}
	if plugins {
		s += "the plugin binaries, "
	}
	return s
}

// citation is CITATION.cff (Citation File Format 1.2.0) for the campaign
// as a dataset.
func citation(p *Provenance, authors []string, entries []Entry) []byte {
	if len(authors) == 0 {
		authors = []string{"msjfarm user"}
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var b strings.Builder
	b.WriteString("cff-version: 1.2.0\n")
	b.WriteString("message: \"If you use these results, please cite them as below.\"\n")
	b.WriteString("type: dataset\n")
	fmt.Fprintf(&b, "title: %s\n", q(fmt.Sprintf("msjfarm campaign %s", p.Name)))
	fmt.Fprintf(&b, "version: %s\n", q(p.Campaign))
	fmt.Fprintf(&b, "date-released: %s\n", q(p.Exported.Format("2006-01-02")))
	b.WriteString("authors:\n")
	for _, a := range authors {
		fmt.Fprintf(&b, "  - name: %s\n", q(a))
	}
	fmt.Fprintf(&b, "abstract: %s\n", q(fmt.Sprintf("Simulation campaign %s (%d results) computed with msjfarm; the archive holds the sweep, every result, %sthe provenance needed to re-run it.", p.Campaign, p.Records, held(p, entries))))
	b.WriteString("keywords:\n  - multiserver-job scheduling\n  - simulation\n  - msjfarm\n")
	return []byte(b.String())
}
