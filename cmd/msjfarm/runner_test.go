package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// Three policy families (three plugin binaries), one with a parameter.
const runnerTestSweep = `name: runner-cmd
seed: 11
workload: one-or-all
axes:
  arrival_rate: [3, 6]
policies:
  - fcfs
  - msf
  - {name: msfq, threshold: [3]}
replications: 2
run: {arrivals: 3e3, warmup: 3e2}
`

type storedRecord struct {
	Task       sweep.Task        `json:"task"`
	Result     json.RawMessage   `json:"result"`
	Provenance map[string]string `json:"provenance"`
	Error      string            `json:"error"`
	// CounterInfo is the policy's description of its counters, stored
	// once in the object CounterInfoRef names (readRecords reads it).
	CounterInfo    []sim.CounterInfo `json:"counter_info"`
	CounterInfoRef string            `json:"counter_info_ref"`
}

func readRecords(t *testing.T, data string) (string, map[string]storedRecord) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(data, "campaigns", "*", "results", "*.json"))
	recs := map[string]storedRecord{}
	camp := ""
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if key, ok := record.ParseRef(b); ok { // the campaign refers to the stored result
			if b, err = os.ReadFile(filepath.Join(data, filepath.FromSlash(storage.StoredResultKey(key)))); err != nil {
				t.Fatal(err)
			}
		}
		var r storedRecord
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if r.CounterInfoRef != "" {
			c, err := os.ReadFile(filepath.Join(data, filepath.FromSlash(storage.CounterInfoKey(r.CounterInfoRef))))
			if err != nil || json.Unmarshal(c, &r.CounterInfo) != nil {
				t.Fatalf("%s: counter descriptions %s: %v", f, r.CounterInfoRef, err)
			}
		}
		recs[r.Task.ID] = r
		camp = filepath.Base(filepath.Dir(filepath.Dir(f)))
	}
	return camp, recs
}

// TestRunnerPluginMatchesInProcess runs the same campaign with -runner
// plugin (the real family binaries, built here) and -runner inprocess: the
// same task ids and seeds give bit-identical sim.Result JSON; the plugin
// campaign pins each policy's binary (uploaded to storage) and every
// result names the runner and the pinned sha256.
//
// Complexity 61: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestRunnerPluginMatchesInProcess(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "plugins")
	t0 := time.Now()
	// The binaries of the campaign's families, as `make plugins` builds them.
	if err := hosttest.Build(bin, "./plugins/fcfs/cmd/msjfarm-policy-fcfs", "./plugins/msf/cmd/msjfarm-policy-msf",
		"./plugins/quickswap/cmd/msjfarm-policy-quickswap"); err != nil {
		t.Fatal(err)
	}
	t.Logf("built the plugins in %v", time.Since(t0).Round(time.Millisecond))
	t.Setenv(pluginhost.EnvPath, bin)
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(runnerTestSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	run := func(runner string) (string, map[string]storedRecord) {
		data := filepath.Join(dir, "data-"+runner)
		t0 := time.Now()
		if code := runRun([]string{"-workers", "2", "-q", "-runner", runner, "-plugin-cache", cache, "-storage", data, sw}); code != 0 {
			t.Fatalf("-runner %s: exit %d", runner, code)
		}
		t.Logf("-runner %s: %v", runner, time.Since(t0).Round(time.Millisecond))
		return readRecords(t, data)
	}
	campP, plug := run("plugin")
	campI, inproc := run("inprocess")
	if campP != campI || len(plug) != 12 || len(inproc) != 12 {
		t.Fatalf("campaigns %s %s, %d and %d results", campP, campI, len(plug), len(inproc))
	}

	st, err := storage.Open(t.Context(), filepath.Join(dir, "data-plugin"))
	if err != nil {
		t.Fatal(err)
	}
	pins, err := protocol.ReadPins(t.Context(), st, campP)
	if err != nil || pins == nil || len(pins.Policies) != 3 {
		t.Fatalf("pins %+v, %v", pins, err)
	}
	for pol, fam := range map[string]string{"fcfs": "fcfs", "msf": "msf", "msfq": "quickswap"} {
		p := pins.Policies[pol]
		sum, _ := pluginhost.Checksum(filepath.Join(bin, pluginhost.BinaryPrefix+fam))
		if p.Plugin != fam || p.SHA256 != sum {
			t.Fatalf("pin of %s: %+v (binary sha256 %s)", pol, p, sum)
		}
		if got, err := st.Get(t.Context(), storage.PluginKey(fam, sum)); err != nil {
			t.Fatalf("binary of %s not in storage: %v", fam, err)
		} else if want, _ := os.ReadFile(filepath.Join(bin, pluginhost.BinaryPrefix+fam)); !bytes.Equal(got, want) {
			t.Fatalf("binary of %s differs in storage", fam)
		}
	}
	var m archive.Manifest
	if data, err := st.Get(t.Context(), storage.ManifestKey(campP)); err != nil || json.Unmarshal(data, &m) != nil {
		t.Fatalf("manifest: %v", err)
	}
	if len(m.Plugins) != 3 || len(m.Policies) != 3 {
		t.Fatalf("manifest plugins %+v, policies %+v", m.Plugins, m.Policies)
	}
	for _, pp := range m.Policies {
		if pin := m.Plugins[pp.Policy]; pp.Runner != "plugin" || pp.PluginSHA256 != pin.SHA256 || !reflect.DeepEqual(pins.Policies[pp.Policy], pin) {
			t.Fatalf("manifest: %+v, pin %+v", pp, pin)
		}
	}
	for id, p := range plug {
		q, ok := inproc[id]
		if !ok {
			t.Fatalf("task %s only in the plugin run", id)
		}
		if p.Error != "" || q.Error != "" || p.Task.Seed != q.Task.Seed {
			t.Fatalf("task %s: errors %q %q, seeds %d %d", id, p.Error, q.Error, p.Task.Seed, q.Task.Seed)
		}
		if !bytes.Equal(p.Result, q.Result) {
			t.Fatalf("task %s (%s): results differ\nplugin:     %s\nin-process: %s", id, p.Task.Policy, p.Result, q.Result)
		}
		// The counter descriptions came over the wire once per plugin
		// and are stored with every result, as the in-process runner
		// stores the built-in policy's own: MSFQ describes its counters,
		// FCFS and MSF report none.
		if !reflect.DeepEqual(p.CounterInfo, q.CounterInfo) || (p.Task.Policy == "msfq") != (len(p.CounterInfo) > 0) {
			t.Fatalf("task %s (%s): counter descriptions %+v (plugin) / %+v (in-process)", id, p.Task.Policy, p.CounterInfo, q.CounterInfo)
		}
		pin := pins.Policies[p.Task.Policy]
		if p.Provenance["runner"] != "plugin" || p.Provenance["plugin_sha256"] != pin.SHA256 || p.Provenance["plugin"] != pin.Plugin ||
			q.Provenance["runner"] != "in-process" {
			t.Fatalf("task %s: provenance %v / %v", id, p.Provenance, q.Provenance)
		}
	}

	// The report of the plugin campaign labels MSFQ's counters with the
	// plugin's descriptions.
	svg, err := os.ReadFile(filepath.Join(dir, "data-plugin", "campaigns", campP, "report", "counter_phase1_mean.svg"))
	if err != nil || !bytes.Contains(svg, []byte(">mean duration of phase 1 (time)<")) {
		t.Fatalf("counter_phase1_mean.svg (%v) has no axis label from the plugin's description", err)
	}

	// Results are reused across campaigns only from the same code: a
	// renamed copy of the sweep (other campaign, same tasks) run with the
	// same plugin binaries reuses all 12; run in-process, none.
	for _, tc := range []struct {
		runner string
		want   int
	}{{"plugin", 12}, {"inprocess", 0}} {
		renamed := filepath.Join(dir, "renamed-"+tc.runner+".yaml")
		spec := strings.Replace(runnerTestSweep, "name: runner-cmd", "name: runner-cmd-"+tc.runner, 1)
		if err := os.WriteFile(renamed, []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errs := captured(t, func() int {
			return runRun([]string{"-workers", "2", "-q", "-runner", tc.runner, "-plugin-cache", cache, "-storage", filepath.Join(dir, "data-plugin"), renamed})
		})
		if want := fmt.Sprintf("(%d reused from other campaigns), %d to run", tc.want, 12-tc.want); code != 0 || !strings.Contains(errs, want) {
			t.Fatalf("renamed sweep, -runner %s: exit %d, want %q in\n%s", tc.runner, code, want, errs)
		}
	}

	// submit -pin-plugins: the submitting machine pins the same binaries.
	h := pluginhost.New(pluginhost.Config{})
	defer h.Close()
	reg := registry.New(t.Context(), registry.Options{Dirs: pluginhost.SearchPath("", nil), Host: h})
	_, camp, _, err := validateSweep(sw, reg, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	st2, err := storage.Open(t.Context(), filepath.Join(dir, "data-submit"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := worker.PinForSubmit(t.Context(), st2, camp, reg, true); err != nil {
		t.Fatal(err)
	}
	if p2, err := protocol.ReadPins(t.Context(), st2, camp.ID); err != nil || p2 == nil || len(p2.Policies) != 3 ||
		!reflect.DeepEqual(p2.Policies["msf"], pins.Policies["msf"]) {
		t.Fatalf("submit pins %+v, %v", p2, err)
	}

	// Without any plugin binary, -runner plugin and the default (auto) run
	// every replication in msjfarm itself re-executed as the families'
	// plugins (here the test binary, through TestMain): bit-identical to
	// in-process, and recorded as the plugin runner with the family's name.
	t.Setenv(pluginhost.EnvPath, t.TempDir())
	for _, mode := range []string{"plugin", "auto"} {
		data := filepath.Join(dir, "self-"+mode)
		if code := runRun([]string{"-workers", "2", "-q", "-runner", mode, "-storage", data, sw}); code != 0 {
			t.Fatalf("-runner %s without binaries: exit %d", mode, code)
		}
		_, recs := readRecords(t, data)
		if len(recs) != len(inproc) {
			t.Fatalf("-runner %s without binaries: %d results", mode, len(recs))
		}
		for id, r := range recs {
			fam := map[string]string{"fcfs": "fcfs", "msf": "msf", "msfq": "quickswap"}[r.Task.Policy]
			if r.Provenance["runner"] != "plugin" || r.Provenance["plugin"] != fam || r.Provenance["builtin"] != "true" ||
				!bytes.Equal(r.Result, inproc[id].Result) {
				t.Fatalf("-runner %s without binaries: task %s provenance %v", mode, id, r.Provenance)
			}
		}
	}
	// msjfarm serving its own built-in families runs the built-in code, so
	// its results are filed as built-in ones: a renamed copy of the sweep
	// run in-process (or again through msjfarm itself) reuses all 12.
	for _, runner := range []string{"inprocess", "auto"} {
		renamed := filepath.Join(dir, "self-renamed-"+runner+".yaml")
		spec := strings.Replace(runnerTestSweep, "name: runner-cmd", "name: runner-cmd-self-"+runner, 1)
		if err := os.WriteFile(renamed, []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errs := captured(t, func() int {
			return runRun([]string{"-workers", "2", "-q", "-runner", runner, "-storage", filepath.Join(dir, "self-auto"), renamed})
		})
		if want := "(12 reused from other campaigns), 0 to run"; code != 0 || !strings.Contains(errs, want) {
			t.Fatalf("self-served results, then -runner %s: exit %d, want %q in\n%s", runner, code, want, errs)
		}
	}
}
