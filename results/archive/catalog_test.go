package archive

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/storage"
)

func TestResolve(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	cands := []Candidate{
		{ID: "aaaa1111", Name: "q-fig3", Created: t0},
		{ID: "aaaa2222", Name: "q-fig3", Created: t0.Add(time.Hour)},
		{ID: "bbbb3333", Name: "other", Created: t0},
		{ID: "cccc4444", Name: "tie", Created: t0},
		{ID: "cccc5555", Name: "tie", Created: t0},
	}
	for _, tc := range []struct {
		arg, want, err string
	}{
		{"aaaa1111", "aaaa1111", ""},                 // exact id
		{"q-fig3", "aaaa2222", ""},                   // latest of the name
		{"other", "bbbb3333", ""},                    // the one of the name
		{"bbb", "bbbb3333", ""},                      // unique id prefix
		{"aaaa", "", "prefix \"aaaa\" is ambiguous"}, // two ids
		{"tie", "", "name \"tie\" is ambiguous"},     // same name, same time
		{"nope", "", "unknown campaign \"nope\"; campaigns: q-fig3 (aaaa2222"},
		{"", "", "no campaign"},
	} {
		got, err := Resolve(tc.arg, cands)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Resolve(%q) = %q, %v; want error containing %q", tc.arg, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.arg, got, err, tc.want)
		}
	}
	if _, err := Resolve("x", nil); err == nil || !strings.Contains(err.Error(), "no campaigns") {
		t.Errorf("empty store: %v", err)
	}
}

// TestResolveOne: for a command that changes what it names, whatever
// could mean two campaigns is an error naming both, where Resolve takes
// the latest of a name or a name over an id it prefixes.
func TestResolveOne(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	cands := []Candidate{
		{ID: "aaaa1111", Name: "twin", Created: t0},
		{ID: "aaaa2222", Name: "twin", Created: t0.Add(time.Second)},
		{ID: "bbbb3333", Name: "cccc", Created: t0}, // a name that prefixes another's id
		{ID: "cccc4444", Name: "other", Created: t0},
	}
	for _, tc := range []struct {
		arg, want, err string
	}{
		{"aaaa1111", "aaaa1111", ""},
		{"other", "cccc4444", ""},
		{"bbb", "bbbb3333", ""},
		{"twin", "", `"twin" could mean 2 campaigns: twin (aaaa2222`},
		{"cccc", "", `"cccc" could mean 2 campaigns`},
		{"nope", "", `unknown campaign "nope"`},
	} {
		got, err := ResolveOne(tc.arg, cands)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ResolveOne(%q) = %q, %v; want error containing %q", tc.arg, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ResolveOne(%q) = %q, %v; want %q", tc.arg, got, err, tc.want)
		}
	}
}

// TestList: campaigns are listed with their manifest's name, time, task
// count and state, and their entries counted; one without a manifest
// takes its name from the spec.
func TestList(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	put := func(k, v string) {
		if err := st.Put(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	put(storage.CampaignSpecKey("c1"), "name: first\n")
	put(storage.ManifestKey("c1"), `{"campaign":"c1","name":"first","state":"done","created":"2026-11-01T00:00:00Z","tasks":3}`)
	put(storage.ResultKey("c1", "t1"), `{"ref":"00aa"}`)
	put(storage.ResultKey("c1", "t2"), `{"ref":"00bb"}`)
	put(storage.CampaignSpecKey("c2"), "name: second\n")
	put(storage.StoredResultKey("00aa"), "{}") // not a campaign
	es, err := List(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 {
		t.Fatalf("entries %+v", es)
	}
	e := es[0]
	if e.ID != "c1" || e.Name != "first" || e.Tasks != 3 || e.Finished != 2 || e.State != "done" {
		t.Errorf("c1: %+v", e)
	}
	if es[1].ID != "c2" || es[1].Name != "second" || es[1].Created.IsZero() {
		t.Errorf("c2: %+v", es[1])
	}
	if id, err := ResolveIn(ctx, st, "second"); err != nil || id != "c2" {
		t.Errorf("ResolveIn(second) = %q, %v", id, err)
	}
	// A name longer than a file name may be is looked up as a name: it
	// was first tried as an id, and the key's "file name too long" ended
	// the lookup.
	long := strings.Repeat("a", 300)
	id := "0123456789abcdef"
	put(storage.CampaignSpecKey(id), "name: "+long+"\n")
	if got, err := ResolveIn(ctx, st, long); err != nil || got != id {
		t.Errorf("ResolveIn(a 300-character name) = %q, %v", got, err)
	}
	if got, err := ResolveIn(ctx, st, id); err != nil || got != id {
		t.Errorf("ResolveIn(%s) = %q, %v", id, got, err)
	}
	// One campaign's manifest cut short: it is listed as damaged, named
	// by its spec, and the others are listed and found by name. It
	// failed the whole listing, and every lookup by name with it.
	put(storage.CampaignSpecKey("c3"), "name: third\n")
	put(storage.ManifestKey("c3"), `{"trunc`)
	es, err = List(ctx, st)
	if err != nil || len(es) != 4 {
		t.Fatalf("with a damaged manifest: %+v, %v", es, err)
	}
	for _, e := range es {
		if e.ID == "c3" && (e.State != StateDamaged || e.Name != "third") {
			t.Errorf("c3: %+v", e)
		}
	}
	if got, err := ResolveIn(ctx, st, "second"); err != nil || got != "c2" {
		t.Errorf("ResolveIn(second) beside a damaged manifest = %q, %v", got, err)
	}
}
