package pluginhost_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
)

// TestEveryFamilyHasAPlugin: each policy family (a package under plugins/
// exporting Policies) has its plugin main, plugins/<family>/cmd/
// msjfarm-policy-<family>, which `make plugins` and hosttest.BuildFamilies
// build.
func TestEveryFamilyHasAPlugin(t *testing.T) {
	root, err := hosttest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := hosttest.FamilyPackages()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, p := range pkgs {
		have[p] = true
	}
	exports := regexp.MustCompile(`(?m)^var Policies\b`)
	dirs, _ := filepath.Glob(filepath.Join(root, "plugins", "*"))
	n := 0
	for _, d := range dirs {
		fam := filepath.Base(d)
		files, _ := filepath.Glob(filepath.Join(d, "*.go"))
		family := false
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			if b, err := os.ReadFile(f); err == nil && exports.Match(b) {
				family = true
			}
		}
		if !family {
			continue
		}
		n++
		if want := "./plugins/" + fam + "/cmd/" + pluginhost.BinaryPrefix + fam; !have[want] {
			t.Errorf("family %s has no plugin main %s", fam, want)
		}
	}
	if n < 10 {
		t.Errorf("found %d policy families, want at least 10", n)
	}
}
