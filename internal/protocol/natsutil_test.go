package protocol_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
)

func TestSubjects(t *testing.T) {
	s := protocol.TaskSubject("c0ffee", "abc123")
	c, tk, ok := protocol.ParseTaskSubject(s)
	if !ok || c != "c0ffee" || tk != "abc123" {
		t.Fatalf("%s → %q %q %v", s, c, tk, ok)
	}
	for _, bad := range []string{"msjfarm.tasks.c", "msjfarm.tasks..t", "other.c.t", "msjfarm.tasks.c.t.x"} {
		if _, _, ok := protocol.ParseTaskSubject(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
	if protocol.MsgID("c", "t", 1) == protocol.MsgID("c", "t", 2) {
		t.Fatal("epochs must give different message ids")
	}
}

// TestEmbeddedAuthAndLayout: an embedded server with user/password accepts
// only the right credentials, and Setup is idempotent and creates what
// Open finds.
func TestEmbeddedAuthAndLayout(t *testing.T) {
	s, url, err := protocol.StartEmbedded(protocol.EmbeddedOptions{StoreDir: t.TempDir(), User: "farm", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	if _, err := protocol.Connect(protocol.ConnOptions{URL: url, User: "farm", Password: "wrong"}); err == nil {
		t.Fatal("wrong password accepted")
	}
	if _, err := protocol.Connect(protocol.ConnOptions{URL: url, User: "a", Password: "b", Creds: "/x"}); err == nil {
		t.Fatal("two authentication methods accepted")
	}
	nc, err := protocol.Connect(protocol.ConnOptions{URL: url, User: "farm", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Open waits for the layout.
	openErr := make(chan error, 1)
	go func() {
		_, err := protocol.Open(ctx, js, 50*time.Millisecond)
		openErr <- err
	}()
	time.Sleep(200 * time.Millisecond)
	for range 2 {
		if _, err := protocol.Setup(ctx, js, protocol.Layout{AckWait: time.Second, MaxDeliver: 3}); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-openErr; err != nil {
		t.Fatal(err)
	}
	h, err := protocol.Open(ctx, js, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cfg := h.Workers.CachedInfo().Config
	if cfg.AckWait != time.Second || cfg.MaxDeliver != 3 {
		t.Fatalf("consumer config %+v", cfg)
	}
	// The API helper reports a missing coordinator clearly.
	var rep protocol.Status
	err = protocol.Request(ctx, nc, protocol.APIStatus, protocol.StatusRequest{Campaign: "x"}, &rep)
	if !errors.Is(err, protocol.ErrNoCoordinator) {
		t.Fatalf("err %v", err)
	}
	// Work-queue semantics: publishing the same message id twice stores one.
	for range 2 {
		if _, err := js.Publish(ctx, protocol.TaskSubject("c", "t"), []byte("{}"), jetstream.WithMsgID(protocol.MsgID("c", "t", 1))); err != nil {
			t.Fatal(err)
		}
	}
	if si, _ := h.Tasks.Info(ctx); si.State.Msgs != 1 {
		t.Fatalf("%d messages", si.State.Msgs)
	}
}
