package examples

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestThirdPartyBuildsAsDocumented builds the example plugin exactly as
// examples/thirdparty/README.md tells a newcomer to — `go build` in that
// directory, whose go.mod must be complete — with -mod=readonly, so that a
// go.mod that lags behind the root module's requirements ("go: updates to
// go.mod needed") fails here. The plugin host's tests build the module
// with -mod=mod in a copy and never saw that.
func TestThirdPartyBuildsAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module (-short)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out := t.TempDir()
	cmd := exec.Command(goBin, "build", "-mod=readonly", "-o", out+string(filepath.Separator), "./cmd/msjfarm-policy-randomfit")
	cmd.Dir = "thirdparty"
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off", "GOTOOLCHAIN=local")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cd examples/thirdparty && go build ./cmd/msjfarm-policy-randomfit: %v\n%s", err, b)
	}
	if fi, err := os.Stat(filepath.Join(out, "msjfarm-policy-randomfit")); err != nil || fi.Size() == 0 {
		t.Fatalf("no plugin binary built: %v", err)
	}
}
