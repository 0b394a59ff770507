package record

import (
	"encoding/json"
	"testing"
)

// TestImplOfSelfServed: msjfarm serving its own built-in family through the
// plugin boundary runs the built-in code, so its result is filed under the
// built-in implementation (and is found by an in-process run of the same
// task); a plugin binary's result stays under its sha256. The flag survives
// the string-map JSON form of the provenance.
func TestImplOfSelfServed(t *testing.T) {
	self := Provenance{Runner: "plugin", Plugin: "fcfs", PluginSHA256: "ab", Builtin: true, Engine: "9.9"}
	data, err := json.Marshal(self)
	if err != nil {
		t.Fatal(err)
	}
	var back Provenance
	if err := json.Unmarshal(data, &back); err != nil || !back.Builtin {
		t.Fatalf("round trip of %s: %+v, %v", data, back, err)
	}
	if im, ok := ImplOf(back); !ok || im != (Impl{Engine: "9.9", Policy: "builtin"}) {
		t.Errorf("self-served: %+v, %v", im, ok)
	}
	bin := Provenance{Runner: "plugin", Plugin: "fcfs", PluginSHA256: "ab", Engine: "9.9"}
	if im, ok := ImplOf(bin); !ok || im != Plugin("9.9", "ab") {
		t.Errorf("plugin binary: %+v, %v", im, ok)
	}
}
