package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPluginListShowsBroken: a non-plugin executable named like a plugin
// is listed with its error instead of being hidden, and a sweep naming a
// policy nobody serves is refused with the directories searched and that
// binary's problem, before anything is written.
func TestPluginListShowsBroken(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "msjfarm-policy-x")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho not a plugin\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out := capture(t, func() int { return runPlugin([]string{"list", "-plugin-path", dir}) })
	if code != 0 || !strings.Contains(out, "error: plugin "+script) || !strings.Contains(out, "start failed") {
		t.Fatalf("plugin list: exit %d\n%s", code, out)
	}
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte("name: s\nseed: 1\nworkload: one-or-all\naxes: {arrival_rate: [1]}\npolicies: [lcfs-fit]\nreplications: 1\nrun: {arrivals: 1e3, warmup: 1e2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if code := runRun([]string{"-q", "-plugin-path", dir, "-storage", data, sw}); code != 2 {
		t.Fatalf("unknown policy: exit %d", code)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("a refused run created %s (%v)", data, err)
	}
}
