package protocol

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/storage"
)

// TestPins: a campaign without pins reads as nil; written pins read back
// equal at the campaign's plugins.json; a corrupt file is an error naming
// its key.
func TestPins(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if p, err := ReadPins(ctx, st, "c1"); p != nil || err != nil {
		t.Fatalf("no pins: %+v, %v", p, err)
	}
	want := &Pins{Campaign: "c1", Policies: map[string]PluginPin{
		"fcfs": {Plugin: "fcfs", Version: "1", Engine: "0.1.0", SHA256: "ab", Key: storage.PluginKey("fcfs", "ab")}}}
	if err := WritePins(ctx, st, want); err != nil {
		t.Fatal(err)
	}
	if PinsKey("c1") != "campaigns/c1/plugins.json" {
		t.Fatalf("PinsKey = %s", PinsKey("c1"))
	}
	got, err := ReadPins(ctx, st, "c1")
	if err != nil || got == nil || got.Campaign != "c1" || len(got.Policies) != 1 || !reflect.DeepEqual(got.Policies["fcfs"], want.Policies["fcfs"]) {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if err := st.Put(ctx, PinsKey("c2"), []byte("{")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPins(ctx, st, "c2"); err == nil || !strings.Contains(err.Error(), PinsKey("c2")) {
		t.Fatalf("corrupt pins: %v", err)
	}
	if err := WritePins(ctx, st, &Pins{}); err == nil {
		t.Fatal("pins without a campaign written")
	}
}
