package coordinator_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/sweep"
)

// TestRefusedSubmitWritesNothing submits every bad sweep of
// sweep/testdata/bad that parses (the rest never reach a coordinator) and
// checks that each is refused naming its field and that nothing was
// written: no object in storage, no task in the stream, no campaign state.
func TestRefusedSubmitWritesNothing(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	paths, err := filepath.Glob("../sweep/testdata/bad/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no bad sweeps: %v", err)
	}
	submitted := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(data), "\n")
		want := strings.TrimPrefix(first, "# want: ")
		f, err := sweep.Load(p)
		if err != nil {
			continue // refused before any request is made
		}
		submitted++
		_, err = co.Submit(context.Background(), protocol.SubmitRequest{Spec: f})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: submit error %v, want one naming %q", filepath.Base(p), err, want)
		}
	}
	if submitted == 0 {
		t.Fatal("no bad sweep reached Submit")
	}
	keys, err := objectsWritten(e.store)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Fatalf("refused submits wrote %d objects: %q", len(keys), keys)
	}
	js, _ := jetstream.New(e.nc)
	st, err := js.Stream(context.Background(), protocol.TaskStream)
	if err != nil {
		t.Fatal(err)
	}
	if si, _ := st.Info(context.Background()); si.State.Msgs != 0 {
		t.Fatalf("refused submits published %d tasks", si.State.Msgs)
	}
	var list protocol.ListReply
	if err := protocol.Request(context.Background(), e.nc, protocol.APIList, struct{}{}, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Campaigns) != 0 {
		t.Fatalf("refused submits left %d campaigns", len(list.Campaigns))
	}
	t.Logf("%d of %d bad sweeps reached Submit", submitted, len(paths))
}
