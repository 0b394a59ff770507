package registry_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// misbehave is the test plugin, built once by TestMain.
var misbehave string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "registry-test-")
	if err != nil {
		panic(err)
	}
	if err := hosttest.Build(dir, "./worker/registry/testdata/misbehave"); err != nil {
		os.RemoveAll(dir)
		panic(err)
	}
	misbehave = filepath.Join(dir, "misbehave")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// install copies the test plugin into dir under each msjfarm-policy-<name>.
func install(t *testing.T, dir string, names ...string) {
	t.Helper()
	b, err := os.ReadFile(misbehave)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, pluginhost.BinaryPrefix+n), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func newHost(t *testing.T) *pluginhost.Host {
	h := pluginhost.New(pluginhost.Config{MaxConcurrent: 1, StartTimeout: 10 * time.Second, DigestDir: "off"})
	t.Cleanup(func() { h.Close() })
	return h
}

// TestBuiltinOnly: the built-in catalogue alone resolves built-in names
// (case-insensitively) with their schemas; an unknown name's error lists
// the built-in names and the directories searched.
func TestBuiltinOnly(t *testing.T) {
	r := registry.Builtin()
	e, err := r.Lookup("MSFQ")
	if err != nil || e.Source != registry.BuiltIn || e.Plugin != "quickswap" || len(e.Params) == 0 {
		t.Fatalf("msfq: %+v, %v", e, err)
	}
	if _, ok := e.Binary(); ok {
		t.Fatal("a built-in without Self has a binary")
	}
	dir := t.TempDir()
	r = registry.New(context.Background(), registry.Options{Dirs: []string{dir}, Host: newHost(t), Self: &registry.Self{Path: "/bin/msjfarm"}})
	_, err = r.Lookup("lcfs-fit")
	if err == nil || !strings.Contains(err.Error(), `unknown policy "lcfs-fit"`) || !strings.Contains(err.Error(), "msfq") ||
		!strings.Contains(err.Error(), dir) {
		t.Fatalf("unknown: %v", err)
	}
	e, err = r.Lookup("fcfs")
	if b, ok := e.Binary(); err != nil || !ok || b.Path != "/bin/msjfarm" || strings.Join(b.Args, " ") != registry.ServeSubcommand+" fcfs" {
		t.Fatalf("self-served fcfs: %+v %v", b, err)
	}
	if _, err := r.CheckParams("msfq", map[string]any{"threshold": -3.0}); err == nil ||
		!strings.Contains(err.Error(), "msfq") || !strings.Contains(err.Error(), "threshold") || !strings.Contains(err.Error(), ">=") {
		t.Fatalf("out of range: %v", err)
	}
}

// TestMisbehavingBinaries: each broken binary on the search path is
// reported with its path and reason, never hangs or crashes the registry,
// and does not hide the good ones; a policy its Info lists but the plugin
// refuses to run fails its run with an error naming the binary.
func TestMisbehavingBinaries(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "good", "badproto", "exits", "badschema", "refuses")
	script := filepath.Join(dir, pluginhost.BinaryPrefix+"x")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'I am not a plugin'\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHost(t)
	t0 := time.Now()
	r := registry.New(context.Background(), registry.Options{Dirs: []string{dir}, Host: h})
	t.Logf("indexed in %v", time.Since(t0))
	broken := map[string]string{}
	for _, b := range r.Broken {
		broken[filepath.Base(b.Path)] = b.String()
	}
	for name, want := range map[string]string{
		"x":         "start failed",
		"badproto":  "protocol version",
		"exits":     "exiting during the handshake",
		"badschema": "rejects its own defaults",
	} {
		got := broken[pluginhost.BinaryPrefix+name]
		if !strings.Contains(got, want) || !strings.Contains(got, filepath.Join(dir, pluginhost.BinaryPrefix+name)) {
			t.Errorf("%s: %q, want it to name the binary and say %q", name, got, want)
		}
	}
	if len(r.Broken) != 4 || len(r.Binaries) != 2 {
		t.Fatalf("broken %v, usable %d", r.Broken, len(r.Binaries))
	}
	if len(r.Warnings()) != 4 {
		t.Fatalf("warnings %v", r.Warnings())
	}
	e, err := r.Lookup("lcfs-fit-test")
	if err != nil || e.Source != registry.Plugin || e.Plugin != "good" {
		t.Fatalf("good plugin: %+v %v", e, err)
	}
	// An unknown policy's error lists the unusable binaries too.
	if _, err := r.Lookup("nope"); err == nil || !strings.Contains(err.Error(), "msjfarm-policy-badproto") {
		t.Fatalf("unknown: %v", err)
	}
	checkGhost(t, r, h)
}

// checkGhost: a policy the good plugin's Info lists ("ghost") but refuses
// to run fails with an error naming the binary; its other policy runs.
func checkGhost(t *testing.T, r *registry.Registry, h *pluginhost.Host) {
	t.Helper()
	e, err := r.Lookup("ghost")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := e.Binary()
	spec, _ := workload.Named("one-or-all")
	req := &wire.RunRequest{Policy: "ghost", Workload: spec, ArrivalRate: 2,
		Run: wire.Run{Seed: 1, RunConfig: wire.RunConfig{Arrivals: 1000, Warmup: 100}}}
	_, err = h.Run(context.Background(), b, req, pluginhost.RunOptions{Deadline: 20 * time.Second})
	var he *pluginhost.Error
	if !errors.As(err, &he) || he.Kind != pluginhost.ErrInvalid || he.Binary != e.Path || !strings.Contains(err.Error(), "ghost") {
		t.Fatalf("ghost: %v", err)
	}
	// Its other policy still runs.
	req.Policy = "fine"
	if out, err := h.Run(context.Background(), b, req, pluginhost.RunOptions{Deadline: 20 * time.Second}); err != nil || out.Result.Overall.Count == 0 {
		t.Fatalf("fine: %v", err)
	}
}

// TestConflicts: two binaries serving one policy, or a binary serving a
// built-in name under another plugin name, are errors naming both; a
// policy nobody else serves still resolves.
func TestConflicts(t *testing.T) {
	dir, dir2 := t.TempDir(), t.TempDir()
	install(t, dir, "good", "impostor")
	install(t, dir2, "good2")
	r := registry.New(context.Background(), registry.Options{Dirs: []string{dir, dir2}, Host: newHost(t)})
	_, err := r.Lookup("lcfs-fit-test")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "msjfarm-policy-good")) || !strings.Contains(err.Error(), filepath.Join(dir2, "msjfarm-policy-good2")) {
		t.Fatalf("two binaries: %v", err)
	}
	_, err = r.Lookup("fcfs")
	if err == nil || !strings.Contains(err.Error(), "built in (family fcfs)") || !strings.Contains(err.Error(), "msjfarm-policy-impostor") {
		t.Fatalf("impostor: %v", err)
	}
	if e, err := r.Lookup("msf"); err != nil || e.Source != registry.BuiltIn {
		t.Fatalf("msf: %+v %v", e, err)
	}
}

// TestPinned: a campaign's pins resolve with their stored schemas, without
// any binary, and win over the search path.
func TestPinned(t *testing.T) {
	one := 1.0
	schema := []sim.Param{{Name: "p", Type: sim.Float, Default: 0.5, Max: &one}}
	pins := &protocol.Pins{Campaign: "c", Policies: map[string]protocol.PluginPin{
		"lcfs-fit": {Plugin: "lcfs", Version: "1.0.0", SHA256: strings.Repeat("ab", 32), Params: schema}}}
	r := registry.New(context.Background(), registry.Options{Pins: pins})
	e, err := r.Lookup("lcfs-fit")
	if err != nil || e.Source != registry.Pinned || e.Pin == nil || len(e.Params) != 1 {
		t.Fatalf("pinned: %+v %v", e, err)
	}
	if _, err := r.CheckParams("lcfs-fit", map[string]any{"p": 2.0}); err == nil || !strings.Contains(err.Error(), `"p"`) || !strings.Contains(err.Error(), "<= 1") {
		t.Fatalf("pinned schema: %v", err)
	}
}

// TestDigestCache: a binary is hashed once per identity; a second cache on
// the same directory (another msjfarm process) reads the digest instead of
// hashing; rewriting the file changes its identity and its digest.
func TestDigestCache(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "bin")
	if err := os.WriteFile(f, []byte("one"), 0o755); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	s1, err := pluginhost.NewDigests(cache).Sum(f)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := pluginhost.Checksum(f)
	entries, _ := os.ReadDir(filepath.Join(cache, "sha256"))
	if s1 != want || len(entries) != 1 {
		t.Fatalf("sum %s want %s, %d cache entries", s1, want, len(entries))
	}
	// Plant a different digest under the same identity: a fresh cache
	// returns it, which proves it read the cache rather than hashing.
	planted := strings.Repeat("0", 64)
	if err := os.WriteFile(filepath.Join(cache, "sha256", entries[0].Name()), []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, _ := pluginhost.NewDigests(cache).Sum(f); s != planted {
		t.Fatalf("second process hashed again: %s", s)
	}
	later := time.Now().Add(time.Minute)
	if err := os.WriteFile(f, []byte("two"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(f, later, later)
	want2, _ := pluginhost.Checksum(f)
	if s, _ := pluginhost.NewDigests(cache).Sum(f); s != want2 || s == want {
		t.Fatalf("changed file: %s, want %s", s, want2)
	}
}

// TestIndexStartsNothingWhenCached: once a binary's digest and Info are in
// the cache directory, indexing the search path again (another msjfarm
// process) starts no plugin process; only running a policy starts its
// binary.
func TestIndexStartsNothingWhenCached(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	install(t, dir, "good", "other")
	host := func() *pluginhost.Host {
		h := pluginhost.New(pluginhost.Config{MaxConcurrent: 1, DigestDir: cache})
		t.Cleanup(func() { h.Close() })
		return h
	}
	h1 := host()
	registry.New(context.Background(), registry.Options{Dirs: []string{dir}, Host: h1})
	if h1.Starts() != 2 {
		t.Fatalf("first index started %d processes, want 2", h1.Starts())
	}
	h2 := host()
	r := registry.New(context.Background(), registry.Options{Dirs: []string{dir}, Host: h2})
	if h2.Starts() != 0 || len(r.Binaries) != 2 {
		t.Fatalf("cached index started %d processes, found %d binaries", h2.Starts(), len(r.Binaries))
	}
	if _, err := r.Lookup("lcfs-fit-test"); err == nil || !strings.Contains(err.Error(), "served by 2 plugin binaries") {
		t.Fatalf("cached Info lost the conflict: %v", err)
	}
}

// TestCachedInfoFollowsEnv: the digest cache keys an Info by what the
// binary is run with. A binary whose Info follows a variable of its
// environment (misbehave's policy name, as badproto's engine) indexed by a
// process passing that variable is not served to a process that does not
// (before, `msjfarm submit` listed the policies a worker's --plugin-env
// had made the binary declare); a process passing the same environment
// again starts nothing.
func TestCachedInfoFollowsEnv(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	install(t, dir, "good")
	index := func(env ...string) (*registry.Registry, int64) {
		h := pluginhost.New(pluginhost.Config{MaxConcurrent: 1, DigestDir: cache, Env: env})
		t.Cleanup(func() { h.Close() })
		r := registry.New(context.Background(), registry.Options{Dirs: []string{dir}, Host: h})
		return r, h.Starts()
	}
	for _, c := range []struct {
		env    []string
		policy string
		starts int64
	}{
		{[]string{"MISBEHAVE_NAME=alpha-test"}, "alpha-test", 1},
		{nil, "lcfs-fit-test", 1},
		{[]string{"MISBEHAVE_NAME=beta-test"}, "beta-test", 1},
		{[]string{"MISBEHAVE_NAME=alpha-test"}, "alpha-test", 0},
		{nil, "lcfs-fit-test", 0},
	} {
		r, starts := index(c.env...)
		if _, err := r.Lookup(c.policy); err != nil || starts != c.starts {
			t.Fatalf("env %q: %v; %d processes started, want %d", c.env, err, starts, c.starts)
		}
	}
}

// TestPluginEscapes: what a plugin writes reaches terminals (plugin info,
// submit --wait, results, the worker's log) with every control character
// written out. A policy whose error moved the cursor over its own line to
// write "3/3 done (100%), 0 failed", and set the terminal's clipboard (OSC
// 52), reaches us as \x0d\x1b[2K…\x1b]52;…\x07; its doc's title change and
// bidirectional override likewise. A policy name with an escape makes its
// binary unusable, said without the raw escape.
func TestPluginEscapes(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "escapes", "escname")
	h := newHost(t)
	r := registry.New(context.Background(), registry.Options{Dirs: []string{dir}, Host: h})
	raw := func(s string) bool { return strings.ContainsAny(s, "\x1b\x07\r\u202e") }
	if len(r.Broken) != 1 || !strings.Contains(r.Broken[0].String(), `policy name "fcfs\x1b[31m": not a name`) || raw(r.Broken[0].String()) {
		t.Fatalf("broken: %v", r.Broken)
	}
	e, err := r.Lookup("fcfs-esc")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := e.Binary()
	info, err := h.Info(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if doc := info.Policies[0].Doc; raw(doc) || !strings.Contains(doc, `FCFS\x1b]0;pwned\x07\x1b[2J, documented with escapes\u202e`) {
		t.Errorf("doc %q", doc)
	}
	spec, _ := workload.Named("one-or-all")
	_, err = h.Run(context.Background(), b, &wire.RunRequest{Policy: "fcfs-esc", Workload: spec, ArrivalRate: 2,
		Run: wire.Run{Seed: 1, RunConfig: wire.RunConfig{Arrivals: 100}}}, pluginhost.RunOptions{Deadline: 20 * time.Second})
	if err == nil || raw(err.Error()) || !strings.Contains(err.Error(), `oops\x0d\x1b[2K3/3 done (100%), 0 failed \x1b]52;c;cm0gLXJmIH4=\x07`) {
		t.Errorf("replication error %q", err)
	}
}

// TestPluginInfoSize: a binary whose Info is larger than the host reads
// (a 64 MiB doc; msjfarm's largest family answers 7.5 KB) is unusable, said so,
// rather than read into every submit's memory and the digest cache.
func TestPluginInfoSize(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "bigdoc", "good")
	r := registry.New(context.Background(), registry.Options{Dirs: []string{dir}, Host: newHost(t)})
	if len(r.Broken) != 1 || !strings.Contains(r.Broken[0].String(), "msjfarm-policy-bigdoc") || !strings.Contains(r.Broken[0].String(), "larger than max") {
		t.Fatalf("broken: %v", r.Broken)
	}
	if _, err := r.Lookup("lcfs-fit-test"); err != nil {
		t.Fatal(err)
	}
}
