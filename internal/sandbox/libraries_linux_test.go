package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLibraryHint: what a confined plugin's start failure says when its
// loader found no library, from the binary's RUNPATH (binaries built here
// with gcc: an absolute RUNPATH, one relative to $ORIGIN, none). The
// directories are named as the binary gives them and never looked into
// (the library's name is the plugin's own words); any other stderr, and
// an unconfined plugin, get no hint.
func TestLibraryHint(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc here")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.c")
	if err := os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func(name string, ldflags ...string) string {
		out := filepath.Join(dir, name)
		if b, err := exec.Command("gcc", append([]string{"-o", out, src}, ldflags...)...).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, b)
		}
		return out
	}
	abs := build("abs", "-Wl,-rpath=/opt/policy/lib:/opt/other", "-Wl,--enable-new-dtags")
	origin := build("origin", "-Wl,-rpath=$ORIGIN/../lib", "-Wl,--enable-new-dtags")
	none := build("none")
	sb, err := New(Options{Mode: BestEffort, User: "self"})
	if err != nil {
		t.Fatal(err)
	}
	off, err := New(Options{Mode: Off, User: "self"})
	if err != nil {
		t.Fatal(err)
	}
	const loader = "/x/msjfarm-policy-c: error while loading shared libraries: libpolicy.so.1: cannot open shared object file: No such file or directory\n"
	for _, c := range []struct {
		name, binary, stderr string
		sb                   *Sandbox
		want, not            []string
	}{
		{"absolute", abs, loader, sb, []string{
			"its dynamic loader found no libpolicy.so.1 where a confined plugin may read: the system's libraries (/lib, /lib64, /usr/lib, /usr/lib64) and the --plugin-readable directories",
			"the binary's RUNPATH names /opt/policy/lib, /opt/other: where it is, --plugin-readable DIR",
			"or link the plugin statically"}, []string{"$ORIGIN"}},
		{"origin", origin, loader, sb, []string{"RUNPATH names $ORIGIN/../lib", "$ORIGIN (the binary's own directory) never holds its libraries for a confined plugin"}, nil},
		{"no runpath", none, loader, sb, []string{"give its directory with --plugin-readable DIR"}, []string{"RUNPATH"}},
		{"another failure", abs, "panic: boom\n", sb, nil, nil},
		{"a name with a slash", abs, "error while loading shared libraries: ../../etc/passwd: x\n", sb, nil, nil},
		{"unconfined", abs, loader, off, nil, nil},
	} {
		got := c.sb.LibraryHint(c.binary, c.stderr)
		if (got == "") != (len(c.want) == 0) {
			t.Errorf("%s: hint %q", c.name, got)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: the hint does not say %q:\n%s", c.name, w, got)
			}
		}
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: the hint says %q:\n%s", c.name, n, got)
			}
		}
	}
}
