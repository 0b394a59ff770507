package redact

import (
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://s3cr3tT0ken@127.0.0.1:4222", "nats://xxxxx@127.0.0.1:4222"},
		{"nats://farm:pa55@nats:4222", "nats://farm:xxxxx@nats:4222"},
		{"tls://a:b@h1:4222,nats://tok@h2:4222", "tls://a:xxxxx@h1:4222,nats://xxxxx@h2:4222"},
		{"nats://h:4222?token=abc&name=x", "nats://h:4222?token=xxxxx&name=x"},
		// The rest of the query as written (order, host:port unescaped).
		{"s3://u:pw@bucket/p?endpoint=minio:9000&secret_key=sk&secure=false", "s3://u:xxxxx@bucket/p?endpoint=minio:9000&secret_key=xxxxx&secure=false"},
		{"https://h/o?a=1;token=t&b=%3A", "https://h/o?a=1;token=xxxxx&b=%3A"},
		{"https://h/o?to%6Ben=t", "https://h/o?to%6Ben=xxxxx"},
		{"s3://bucket?endpoint=minio:9000&secure=false", "s3://bucket?endpoint=minio:9000&secure=false"},
		{"https://h/o?X-Amz-Signature=deadbeef&X-Amz-Credential=AK", "https://h/o?X-Amz-Signature=xxxxx&X-Amz-Credential=xxxxx"},
		{"https://h/o?s3_secret_key=k", "https://h/o?s3_secret_key=xxxxx"},
		{"127.0.0.1:4222", "127.0.0.1:4222"},
		{"http://h:8080/a%2fb?x=1&a=2", "http://h:8080/a%2fb?x=1&a=2"}, // untouched, not re-encoded
		// Passwords url.Parse refuses ('/', a space): masked up to the
		// last '@'; the pattern for text stopped at the '/'.
		{"nats://farm:ab+cd/EF==@127.0.0.1:4501", "nats://farm:xxxxx@127.0.0.1:4501"},
		{"nats://farm:Pw Secret@h:1", "nats://farm:xxxxx@h:1"},
		{"nats://to/ken@h:1", "nats://xxxxx@h:1"},
		{"nats://farm:hunter2@corp/2024x@127.0.0.1:4520", "nats://farm:xxxxx@127.0.0.1:4520"},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestText(t *testing.T) {
	in := `connecting to nats://tok3n@10.0.0.1:4222, nats://u:pw9@h:1: nats: Authorization Violation (key AKIAXYZ)`
	got := Text(in, "AKIAXYZ", "")
	for _, s := range []string{"tok3n", "pw9", "AKIAXYZ"} {
		if strings.Contains(got, s) {
			t.Errorf("Text left %q in %q", s, got)
		}
	}
	for _, s := range []string{"nats://xxxxx@10.0.0.1:4222,", "nats://u:xxxxx@h:1:", "Authorization Violation"} {
		if !strings.Contains(got, s) {
			t.Errorf("Text(%q) = %q: %q missing", in, got, s)
		}
	}
}

func TestWriter(t *testing.T) {
	var b strings.Builder
	w := Writer(&b, "hunter2")
	line := []byte("level=INFO msg=\"ready (NATS nats://t0k@h:1)\" pw=hunter2\n")
	n, err := w.Write(line)
	if err != nil || n != len(line) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if got := b.String(); strings.Contains(got, "t0k") || strings.Contains(got, "hunter2") || !strings.HasSuffix(got, "pw=xxxxx\n") {
		t.Errorf("wrote %q", got)
	}
}

// TestShortSecretWholeWord: a secret under 8 characters is masked where
// it stands alone, not inside a longer word; a longer one everywhere. By
// hand: "farm" in "msjfarm:" touches 'j' (kept), alone after "pw=" and
// before a space (masked); "farm2" is another word (kept); "s3cr3tpassword"
// is 14 characters and masked inside "Xs3cr3tpasswordY" too.
func TestShortSecretWholeWord(t *testing.T) {
	got := Text("msjfarm: pw=farm farm2 (farm) Xs3cr3tpasswordY", "farm", "s3cr3tpassword")
	if want := "msjfarm: pw=xxxxx farm2 (xxxxx) XxxxxxY"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestUserinfo(t *testing.T) {
	for _, c := range []struct {
		in, user, pw string
		ok           bool
	}{
		{"nats://u:p@h:1", "u", "p", true},
		{"nats://u:a/b@c@h:1", "u", "a/b@c", true},
		{"nats://tok@h", "tok", "", true},
		{"nats://h:1", "", "", false},
		{"u:p@h", "", "", false},
	} {
		u, p, ok := Userinfo(c.in)
		if u != c.user || p != c.pw || ok != c.ok {
			t.Errorf("Userinfo(%q) = %q, %q, %v; want %q, %q, %v", c.in, u, p, ok, c.user, c.pw, c.ok)
		}
	}
}
