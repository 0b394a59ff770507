package wire_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/internal/wire"
	pb "github.com/msjfarm/msjfarm/internal/wire/proto"
	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim"
)

// TestCheckCounterInfo: what a label and a unit may be. Accepted: the
// built-in families' kind of text (Greek letters, ℓ, "1/time",
// "server-time", "P_H"; a comma in a doc), an empty label or unit. Refused, each with the
// field named: markup, quoting, CSV separators, formula starts, control
// characters, doubled spaces, over-long text and blob-sized words.
func TestCheckCounterInfo(t *testing.T) {
	ok := []sim.CounterInfo{
		{Name: "phase3_mean", Label: "mean duration of phase 3", Unit: "time", Kind: sim.KindTime,
			Doc: "phase 3: serving 1-server jobs until at most ℓ are in service, then phase 4"},
		{Name: "psi", Label: "partition parameter ψ"},
		{Name: "p_helper", Label: "arrivals routed to helpers P_H", Kind: sim.KindFraction},
		{Name: "wasted_work", Label: "work discarded by kills", Unit: "server-time"},
		{Name: "switch_rate", Label: "class switches [95% of all]", Unit: "1/time", Kind: sim.KindRate},
		{Name: "bare"},
	}
	if err := wire.CheckCounterInfo(ok); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		info sim.CounterInfo
		want string
	}{
		{sim.CounterInfo{Name: "x", Label: "a <b>"}, "label (counter x): contains U+003C"},
		{sim.CounterInfo{Name: "x", Label: `say "hi"`}, "label (counter x): contains U+0022"},
		{sim.CounterInfo{Name: "x", Label: "a, b"}, "contains U+002C"},
		{sim.CounterInfo{Name: "x", Label: "a;b"}, "contains U+003B"},
		{sim.CounterInfo{Name: "x", Label: "@SUM(A1)"}, "starts with =, +, - or @"},
		{sim.CounterInfo{Name: "x", Label: "+1"}, "starts with =, +, - or @"},
		{sim.CounterInfo{Name: "x", Label: "line\nbreak"}, "contains U+000A"},
		{sim.CounterInfo{Name: "x", Label: "tab\there"}, "contains U+0009"},
		{sim.CounterInfo{Name: "x", Label: "a  b"}, "repeated spaces"},
		{sim.CounterInfo{Name: "x", Label: " a"}, "leading"},
		{sim.CounterInfo{Name: "x", Label: "a\u202eb"}, "contains U+202E"}, // right-to-left override
		{sim.CounterInfo{Name: "x", Label: "\xff"}, "not valid UTF-8"},
		{sim.CounterInfo{Name: "x", Label: strings.Repeat("word ", 13) + "end"}, "has 68 characters, more than 32"},
		{sim.CounterInfo{Name: "x", Doc: strings.Repeat("word ", 20) + "end"}, "doc (counter x): has 103 characters, more than 100"},
		{sim.CounterInfo{Name: "x", Doc: "a <b>"}, "doc (counter x): contains U+003C"},
		{sim.CounterInfo{Name: "x", Doc: "=1+1"}, "doc (counter x): starts with"},
		{sim.CounterInfo{Name: "x", Label: "AKIAIOSFODNN7EXAMPLE1"}, "word longer than 20"},
		{sim.CounterInfo{Name: "x", Label: "thirty-two characters exactly xy"}, ""},
		{sim.CounterInfo{Name: "x", Unit: "server-time/job"}, ""}, // 15 characters
		{sim.CounterInfo{Name: "x", Unit: "server-time/jobs"}, ""},
		{sim.CounterInfo{Name: "x", Unit: "server-time/jobs2"}, "unit (counter x): has 17 characters, more than 16"},
		{sim.CounterInfo{Name: "x", Doc: "K §4.4, eq. (3)"}, ""},
		{sim.CounterInfo{Name: "x", Kind: "percent"}, "kind (counter x): a kind of 7 bytes is not one of"},
		{sim.CounterInfo{Name: "X"}, "name: a name of 1 bytes is not lower-case words"},
		{sim.CounterInfo{Name: "a/b"}, "is not lower-case words"},
		{sim.CounterInfo{Name: ""}, "is not lower-case words"},
	} {
		err := wire.CheckCounterInfo([]sim.CounterInfo{c.info})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.info, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: error %v, want %q", c.info, err, c.want)
		}
	}
	many := make([]sim.CounterInfo, wire.MaxCounters+1)
	if err := wire.CheckCounterInfo(many); err == nil || !strings.Contains(err.Error(), "257, more than 256") {
		t.Errorf("%d descriptions: %v", len(many), err)
	}
}

// described is FCFS with its (absent) counters described.
type described struct {
	fcfs.FCFS
	info []sim.CounterInfo
}

func (d *described) DescribeCounters() []sim.CounterInfo { return d.info }

// The server sends a policy's descriptions in its Info (once, as JSON),
// nothing for a policy without them, and refuses to serve descriptions the
// host would refuse, naming the policy and the field.
func TestServerCounterInfo(t *testing.T) {
	info := []sim.CounterInfo{{Name: "phase1_mean", Label: "mean phase 1 duration", Unit: "time", Kind: sim.KindTime}}
	srv, err := wire.NewServer("x", "1", append([]wire.Entry{{Name: "described", New: func() sim.Policy { return &described{info: info} }}}, fcfsEntries...), wire.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := srv.Info(context.Background(), &pb.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []sim.CounterInfo
	if err := json.Unmarshal(in.Policies[0].CountersJson, &got); err != nil || !reflect.DeepEqual(got, info) {
		t.Fatalf("counters_json %s (%v), want %+v", in.Policies[0].CountersJson, err, info)
	}
	if b := in.Policies[1].CountersJson; len(b) != 0 {
		t.Errorf("fcfs describes no counters, counters_json %s", b)
	}
	bad := []sim.CounterInfo{{Name: "x", Label: "<img src=x>"}}
	_, err = wire.NewServer("x", "1", []wire.Entry{{Name: "bad", New: func() sim.Policy { return &described{info: bad} }}}, wire.ServerOptions{})
	if err == nil || !strings.Contains(err.Error(), "policy bad: counter descriptions[0].label (counter x): contains U+003C") {
		t.Fatalf("hostile descriptions served: %v", err)
	}
}
