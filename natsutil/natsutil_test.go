package natsutil_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/natsutil"
)

func TestSubjects(t *testing.T) {
	s := natsutil.TaskSubject("c0ffee", "abc123")
	c, tk, ok := natsutil.ParseTaskSubject(s)
	if !ok || c != "c0ffee" || tk != "abc123" {
		t.Fatalf("%s → %q %q %v", s, c, tk, ok)
	}
	for _, bad := range []string{"msjfarm.tasks.c", "msjfarm.tasks..t", "other.c.t", "msjfarm.tasks.c.t.x"} {
		if _, _, ok := natsutil.ParseTaskSubject(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
	if natsutil.MsgID("c", "t", 1) == natsutil.MsgID("c", "t", 2) {
		t.Fatal("epochs must give different message ids")
	}
}

// TestEmbeddedAuthAndLayout: an embedded server with user/password accepts
// only the right credentials, and Setup is idempotent and creates what
// Open finds.
func TestEmbeddedAuthAndLayout(t *testing.T) {
	s, url, err := natsutil.StartEmbedded(natsutil.EmbeddedOptions{StoreDir: t.TempDir(), User: "farm", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	if _, err := natsutil.Connect(natsutil.ConnOptions{URL: url, User: "farm", Password: "wrong"}); err == nil {
		t.Fatal("wrong password accepted")
	}
	if _, err := natsutil.Connect(natsutil.ConnOptions{URL: url, User: "a", Password: "b", Creds: "/x"}); err == nil {
		t.Fatal("two authentication methods accepted")
	}
	nc, err := natsutil.Connect(natsutil.ConnOptions{URL: url, User: "farm", Password: "s3cret"})
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
		_, err := natsutil.Open(ctx, js, 50*time.Millisecond)
		openErr <- err
	}()
	time.Sleep(200 * time.Millisecond)
	for range 2 {
		if _, err := natsutil.Setup(ctx, js, natsutil.Layout{AckWait: time.Second, MaxDeliver: 3}); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-openErr; err != nil {
		t.Fatal(err)
	}
	h, err := natsutil.Open(ctx, js, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cfg := h.Workers.CachedInfo().Config
	if cfg.AckWait != time.Second || cfg.MaxDeliver != 3 {
		t.Fatalf("consumer config %+v", cfg)
	}
	// The API helper reports a missing coordinator clearly.
	var rep natsutil.Status
	err = natsutil.Request(ctx, nc, natsutil.APIStatus, natsutil.StatusRequest{Campaign: "x"}, &rep)
	if !errors.Is(err, natsutil.ErrNoCoordinator) {
		t.Fatalf("err %v", err)
	}
	// Work-queue semantics: publishing the same message id twice stores one.
	for range 2 {
		if _, err := js.Publish(ctx, natsutil.TaskSubject("c", "t"), []byte("{}"), jetstream.WithMsgID(natsutil.MsgID("c", "t", 1))); err != nil {
			t.Fatal(err)
		}
	}
	if si, _ := h.Tasks.Info(ctx); si.State.Msgs != 1 {
		t.Fatalf("%d messages", si.State.Msgs)
	}
}
