package pluginhost

import (
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

// TestCheckName: a plugin's names are plain names.
func TestCheckName(t *testing.T) {
	for _, bad := range []string{"", "-x", "a b", "fcfs\x1b[31m", "a/b", "é", string(make([]byte, 65))} {
		if checkName("policy name", bad) == nil {
			t.Errorf("checkName(%q) accepted", bad)
		}
	}
	for _, good := range []string{"fcfs", "msfq-copy", "cap-fit", "serverfilling-srpt", "X1.2_b+c"} {
		if err := checkName("policy name", good); err != nil {
			t.Errorf("checkName(%q): %v", good, err)
		}
	}
}

// TestInfoOneLine: what a plugin says of itself that is shown inside one
// line stays one line; a forged line of msjfarm's own came out of `plugin
// info` from a version ending in a newline.
func TestInfoOneLine(t *testing.T) {
	forged := "1.0\nmsjfarm: sandbox check: all plugins confined OK"
	in := Info{Name: "x", Version: forged, Engine: forged, GoVersion: forged,
		Policies: []PolicyInfo{{Name: "p", Doc: "two\nlines", Preemption: forged, Params: []sim.Param{{Name: "q", Enum: []string{forged}}}}}}
	if err := in.check(); err != nil {
		t.Fatal(err)
	}
	p := in.Policies[0]
	for _, v := range []string{in.Version, in.Engine, in.GoVersion, p.Preemption, p.Params[0].Enum[0]} {
		if v != `1.0\nmsjfarm: sandbox check: all plugins confined OK` {
			t.Errorf("got %q", v)
		}
	}
	if p.Doc != "two\nlines" {
		t.Errorf("doc %q: its lines are kept", p.Doc)
	}
}
