package protocol_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
)

// TestConnectToken: an embedded server with a token accepts the token
// given as an option or in the URL; a wrong one fails at once (no 10 s of
// retries) with an error that names the server, says what to check and
// never contains a token — the right one or the wrong one.
func TestConnectToken(t *testing.T) {
	const token, wrong = "tok-7c1e93d0", "bad-4a2f8e61"
	s, url, err := protocol.StartEmbedded(protocol.EmbeddedOptions{StoreDir: t.TempDir(), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	host := strings.TrimPrefix(url, "nats://")
	for _, o := range []protocol.ConnOptions{{URL: url, Token: token}, {URL: "nats://" + token + "@" + host}} {
		nc, err := protocol.Connect(o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		nc.Close()
	}
	for _, c := range []struct {
		o      protocol.ConnOptions
		server string
	}{
		{protocol.ConnOptions{URL: url, Token: wrong}, url},
		{protocol.ConnOptions{URL: "nats://" + wrong + "@" + host}, "nats://xxxxx@" + host},
		{protocol.ConnOptions{URL: url}, url},
	} {
		start := time.Now()
		_, err := protocol.Connect(c.o)
		if err == nil {
			t.Fatalf("%+v: connected", c.o)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%+v: failed after %v, want at once", c.o, d)
		}
		var ce *protocol.ConnError
		if !errors.As(err, &ce) || ce.Server != c.server {
			t.Errorf("%+v: error %T %v, want a ConnError naming %s", c.o, err, err, c.server)
		}
		msg := err.Error()
		if strings.Contains(msg, token) || strings.Contains(msg, wrong) {
			t.Errorf("the error shows a token: %s", msg)
		}
		if !strings.Contains(msg, "refused the credentials") || !strings.Contains(msg, c.server) {
			t.Errorf("error %q: want the server and the cause", msg)
		}
	}
	if _, _, err := protocol.StartEmbedded(protocol.EmbeddedOptions{StoreDir: t.TempDir(), Token: token, User: "u"}); err == nil {
		t.Error("an embedded server with a token and a user started")
	}
}

// TestConnectUnparsableURL: a URL whose password url.Parse refuses (a
// base64 password holding '/', a space) is refused without repeating any
// of it. nats.go's error quoted the URL whole, and its reason a piece of
// the password ("invalid port \":ab+cd\" after host").
func TestConnectUnparsableURL(t *testing.T) {
	for _, u := range []string{"nats://farm:ab+cd/EF==@127.0.0.1:4222", "nats://farm:Pw SecretG@127.0.0.1:4222",
		"nats://127.0.0.1:4222,tls://farm:x/y%zz@h:1", "nats://farm:hunter2@corp/2024x@127.0.0.1:4520", "nats://tok/enSECRET@127.0.0.1:4222"} {
		_, err := protocol.Connect(protocol.ConnOptions{URL: u})
		if err == nil || !strings.Contains(err.Error(), "does not parse as a URL; it is not repeated here") {
			t.Errorf("Connect(%q) = %v", u, err)
			continue
		}
		for _, piece := range []string{"ab+cd", "EF==", "Secret", "x/y", "farm", "corp", "2024x", "hunter2", "tok/en", "SECRET"} {
			if strings.Contains(err.Error(), piece) {
				t.Errorf("Connect(%q): the error repeats %q: %v", u, piece, err)
			}
		}
	}
}

// TestStartEmbeddedBusyPort: an embedded server asked for a port another
// process listens on, or one out of range, fails at once with the cause;
// it waited 30 s and said "not ready".
func TestStartEmbeddedBusyPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, _, err = protocol.StartEmbedded(protocol.EmbeddedOptions{Listen: l.Addr().String(), StoreDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("busy port: %v", err)
	}
	_, _, err = protocol.StartEmbedded(protocol.EmbeddedOptions{Listen: "127.0.0.1:70000", StoreDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "port 70000 is not in 0..65535") {
		t.Fatalf("port out of range: %v", err)
	}
}

// TestConnectURLForms: host:port without a scheme is a NATS URL (as
// nats.go reads it; the check for unparsable URLs refused it for a
// while); an http:// address is not, and a password without its user is
// refused before the server answers "Authorization Violation".
func TestConnectURLForms(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	if _, err := protocol.Connect(protocol.ConnOptions{URL: dead}); err == nil || !strings.Contains(err.Error(), "connecting to NATS at "+dead) {
		t.Errorf("host:port: %v", err)
	}
	if _, err := protocol.Connect(protocol.ConnOptions{URL: "http://" + dead}); err == nil || !strings.Contains(err.Error(), `scheme "http" is not NATS's`) {
		t.Errorf("http://: %v", err)
	}
	_, err = protocol.Connect(protocol.ConnOptions{URL: "nats://farm@" + dead, Password: "pw-of-farm"})
	if err == nil || !strings.Contains(err.Error(), "a NATS password needs its user") || strings.Contains(err.Error(), "pw-of-farm") {
		t.Errorf("password without user: %v", err)
	}
}

// TestConnectToANonNATSPort: a port that accepts the connection and says
// nothing (a web server, MinIO's) is named as probably not NATS's; the
// error was a bare "i/o timeout".
func TestConnectToANonNATSPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent, until the listener closes
		}
	}()
	_, err = protocol.Connect(protocol.ConnOptions{URL: "nats://" + l.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "sent no NATS greeting: is this a NATS port") {
		t.Fatalf("silent port: %v", err)
	}
}
