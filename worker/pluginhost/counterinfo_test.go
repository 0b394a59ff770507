package pluginhost_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
)

// A plugin's counter descriptions travel once, in its Info, and come back
// with every outcome of the policy; a plugin that describes none (FCFS, and
// the third-party example, built as a plugin written before descriptions
// existed would be) runs as before with none.
func TestCounterInfoOverTheWire(t *testing.T) {
	good := `[{"name":"phase1_mean","label":"mean duration of phase 1","unit":"time","kind":"time","doc":"phase 1: serving k-server jobs"},` +
		`{"name":"preempted_fraction","label":"jobs preempted","kind":"fraction"}]`
	want := sim.CounterInfos{
		{Name: "phase1_mean", Label: "mean duration of phase 1", Unit: "time", Kind: sim.KindTime, Doc: "phase 1: serving k-server jobs"},
		{Name: "preempted_fraction", Label: "jobs preempted", Kind: sim.KindFraction},
	}
	h := newHost(t, pluginhost.Config{Env: []string{"BADPROTO_COUNTERS=" + good}})
	b := pluginhost.Binary{Path: binary("badproto")}
	in, err := h.Info(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if got := in.Policies[0].CounterInfo; !reflect.DeepEqual(got, want) {
		t.Fatalf("Info's counter descriptions %+v, want %+v", got, want)
	}
	out, err := h.Run(context.Background(), b, request(t, "fcfs", 100, 1), pluginhost.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.CounterInfo, want) {
		t.Fatalf("outcome's counter descriptions %+v, want %+v", out.CounterInfo, want)
	}

	for _, name := range []string{"fcfs", "randomfit"} {
		h := newHost(t, pluginhost.Config{})
		policy := map[string]string{"fcfs": "fcfs", "randomfit": "random-fit"}[name]
		out, err := h.Run(context.Background(), pluginhost.Binary{Path: binary(name)}, request(t, policy, 100, 1), pluginhost.RunOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out.CounterInfo != nil {
			t.Errorf("%s describes no counters, outcome has %+v", name, out.CounterInfo)
		}
	}
}

// A plugin whose counter descriptions would carry markup, a formula, a
// terminal escape or a secret-sized blob into every report is refused at
// start-up, with the entry, the field and the reason, and without the
// offending text.
func TestHostileCounterInfoRefused(t *testing.T) {
	secret := "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"
	for _, c := range []struct {
		name, json string
		want       []string
		text       string // must not appear in the error
	}{
		{"markup", `[{"name":"x","label":"<script>alert(1)</script>"}]`, []string{"counter descriptions[0].label", "U+003C"}, "alert"},
		{"formula", `[{"name":"x","label":"=HYPERLINK(1)"}]`, []string{"label", "formula"}, "HYPERLINK"},
		{"escape", `[{"name":"x","label":"ok","unit":"\u001b[31m"}]`, []string{"counter descriptions[0].unit", "U+001B"}, "[31m"},
		{"secret", `[{"name":"x","doc":"the key ` + secret + `"}]`, []string{"counter descriptions[0].doc", "word longer than 20"}, secret},
		{"long", `[{"name":"x","label":"` + strings.Repeat("ab ", 30) + `"}]`, []string{"label", "more than 32"}, "ab ab"},
		{"name", `[{"name":"../etc/passwd","label":"x"}]`, []string{"counter descriptions[0].name", "lower-case words"}, "passwd"},
		{"kind", `[{"name":"x","label":"x","kind":"<b>"}]`, []string{"counter descriptions[0].kind"}, "<b>"},
		{"twice", `[{"name":"x"},{"name":"x"}]`, []string{"counter descriptions[1].name", "described twice"}, ""},
		{"not JSON", `{"name":`, []string{"unreadable counter descriptions"}, ""},
		{"too big", `[` + strings.Repeat(`{"name":"x"},`, 6000) + `{"name":"x"}]`, []string{"bytes, more than"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, pluginhost.Config{Env: []string{"BADPROTO_COUNTERS=" + c.json}})
			_, err := h.Info(context.Background(), pluginhost.Binary{Path: binary("badproto")})
			wantKind(t, err, pluginhost.ErrStart, append([]string{"policy fcfs"}, c.want...)...)
			if c.text != "" && strings.Contains(err.Error(), c.text) {
				t.Errorf("the error quotes the refused text: %v", err)
			}
		})
	}
}
