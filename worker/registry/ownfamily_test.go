package registry

import (
	"testing"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sim"
)

// TestOwnFamily: a built-in policy served by a plugin binary is checked
// as the built-in one exactly when the binary reports the policy's own
// family at this build's family and engine versions (msjfarm's own build
// of that family, make build's bin/plugins).
func TestOwnFamily(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    Entry
		want bool
	}{
		{"its family, these versions", Entry{Policy: "msfq", Plugin: "quickswap", Version: builtin.Version, Engine: sim.Version}, true},
		{"case of the name", Entry{Policy: "MSFQ", Plugin: "quickswap", Version: builtin.Version, Engine: sim.Version}, true},
		{"another engine", Entry{Policy: "msfq", Plugin: "quickswap", Version: builtin.Version, Engine: "0.0.1"}, false},
		{"another family version", Entry{Policy: "msfq", Plugin: "quickswap", Version: "9.9.9", Engine: sim.Version}, false},
		{"another family's name", Entry{Policy: "msfq", Plugin: "msf", Version: builtin.Version, Engine: sim.Version}, false},
		{"a third party's plugin", Entry{Policy: "msfq", Plugin: "myquickswap", Version: builtin.Version, Engine: sim.Version}, false},
		{"not a built-in policy", Entry{Policy: "hostile-honest", Plugin: "hostile", Version: builtin.Version, Engine: sim.Version}, false},
	} {
		if got := ownFamily(tc.e); got != tc.want {
			t.Errorf("%s: ownFamily(%+v) = %v, want %v", tc.name, tc.e, got, tc.want)
		}
	}
}
