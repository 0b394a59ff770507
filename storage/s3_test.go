package storage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/storage/miniotest"
)

// clearCredentialEnv makes the test independent of the caller's environment.
func clearCredentialEnv(t *testing.T) {
	for _, pair := range credentialEnv {
		t.Setenv(pair[0], "")
		t.Setenv(pair[1], "")
	}
	t.Setenv("AWS_SESSION_TOKEN", "")
}

// TestMinIO runs the conformance suite and the S3-specific checks against a
// real MinIO server (see package miniotest for how the binary is found).
func TestMinIO(t *testing.T) {
	ep, ak, sk := miniotest.Start(t)
	ctx := context.Background()
	creds := WithCredentials(ak, sk)

	t.Run("Conformance", func(t *testing.T) {
		s, err := Open(ctx, "s3://msjfarm-conf?endpoint="+ep+"&secure=false", creds)
		if err != nil {
			t.Fatal(err)
		}
		if want := "s3://msjfarm-conf?endpoint=" + ep + "&secure=false"; s.URL() != want {
			t.Errorf("URL() = %q, want %q", s.URL(), want)
		}
		testStore(t, s)
	})

	t.Run("ID", func(t *testing.T) {
		// One server under two endpoint names is one store; another
		// bucket is another.
		port := ep[strings.LastIndex(ep, ":"):]
		a, err := Open(ctx, "s3://msjfarm-id?endpoint=127.0.0.1"+port+"&secure=false", creds)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Open(ctx, "s3://msjfarm-id?endpoint=localhost"+port+"&secure=false", creds)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Open(ctx, "s3://msjfarm-id-other?endpoint="+ep+"&secure=false", creds)
		if err != nil {
			t.Fatal(err)
		}
		ia, erra := ID(ctx, a)
		ib, errb := ID(ctx, b)
		ic, errc := ID(ctx, c)
		if erra != nil || errb != nil || errc != nil || ia != ib || ia == ic || !ValidID(ia) || !ValidID(ic) {
			t.Errorf("IDs %q (%v), %q (%v), %q (%v)", ia, erra, ib, errb, ic, errc)
		}
	})

	t.Run("NoCreate", func(t *testing.T) {
		// A dry run's Open: a missing bucket is ErrNotFound and stays
		// missing; an existing one opens.
		u := "s3://msjfarm-nocreate?endpoint=" + ep + "&secure=false"
		if _, err := Open(ctx, u, creds, NoCreate()); !errors.Is(err, ErrNotFound) {
			t.Fatalf("missing bucket: %v", err)
		}
		if _, err := Open(ctx, u, creds, NoCreate()); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the first NoCreate open created the bucket: %v", err)
		}
		if _, err := Open(ctx, u, creds); err != nil {
			t.Fatal(err)
		}
		s, err := Open(ctx, u, creds, NoCreate())
		if err != nil {
			t.Fatalf("existing bucket: %v", err)
		}
		if err := CheckWritable(ctx, s); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ConformanceWithPrefix", func(t *testing.T) {
		s, err := Open(ctx, "s3://msjfarm-prefixed/farm/one?endpoint="+ep+"&secure=false&region=us-east-1", creds)
		if err != nil {
			t.Fatal(err)
		}
		testStore(t, s)

		// Objects live under the prefix, and a store on the bare
		// bucket sees them there; a sibling prefix sees nothing.
		mustPut(t, s, "iso/k", []byte("v"))
		root, err := Open(ctx, "s3://msjfarm-prefixed?endpoint="+ep+"&secure=false", creds)
		if err != nil {
			t.Fatal(err)
		}
		if got := mustGet(t, root, "farm/one/iso/k"); string(got) != "v" {
			t.Errorf("bare bucket Get = %q", got)
		}
		sib, err := Open(ctx, "s3://msjfarm-prefixed/farm/two?endpoint="+ep+"&secure=false", creds)
		if err != nil {
			t.Fatal(err)
		}
		if keys, err := sib.List(ctx, ""); err != nil || len(keys) != 0 {
			t.Errorf("sibling prefix List = %q, %v; want empty", keys, err)
		}
		// Url round trip reaches the same objects.
		again, err := Open(ctx, s.URL(), creds)
		if err != nil {
			t.Fatalf("Open(URL()=%q): %v", s.URL(), err)
		}
		if got := mustGet(t, again, "iso/k"); string(got) != "v" {
			t.Errorf("Open(URL()) Get = %q", got)
		}
	})

	t.Run("ConcurrentBucketCreation", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				s, err := Open(ctx, "s3://msjfarm-race?endpoint="+ep+"&secure=false", creds)
				if err != nil {
					t.Errorf("Open %d: %v", i, err)
					return
				}
				if err := s.Put(ctx, fmt.Sprintf("k%d", i), []byte("x")); err != nil {
					t.Errorf("Put %d: %v", i, err)
				}
			})
		}
		wg.Wait()
	})

	t.Run("EnvCredentials", func(t *testing.T) {
		clearCredentialEnv(t)
		u := "s3://msjfarm-env?endpoint=" + ep + "&secure=false"
		if _, err := Open(ctx, u); err == nil || !strings.Contains(err.Error(), "MSJFARM_S3_ACCESS_KEY") {
			t.Errorf("Open without credentials: %v; want an error naming MSJFARM_S3_ACCESS_KEY", err)
		}
		t.Setenv("MINIO_ROOT_USER", ak)
		t.Setenv("MINIO_ROOT_PASSWORD", sk)
		if _, err := Open(ctx, u); err != nil {
			t.Errorf("Open with MINIO_ROOT_*: %v", err)
		}
		t.Setenv("AWS_ACCESS_KEY_ID", ak)
		t.Setenv("AWS_SECRET_ACCESS_KEY", sk)
		if _, err := Open(ctx, u); err != nil {
			t.Errorf("Open with AWS_*: %v", err)
		}
		// MSJFARM_S3_* takes precedence over the others.
		t.Setenv("MSJFARM_S3_ACCESS_KEY", ak)
		t.Setenv("MSJFARM_S3_SECRET_KEY", "wrong-secret")
		if _, err := Open(ctx, u); err == nil {
			t.Error("Open with wrong MSJFARM_S3_SECRET_KEY succeeded; MSJFARM_S3_* should win over AWS_*/MINIO_ROOT_*")
		}
		// Explicit credentials beat the environment.
		if _, err := Open(ctx, u, creds); err != nil {
			t.Errorf("Open WithCredentials: %v", err)
		}
	})

	t.Run("EndpointForms", func(t *testing.T) {
		// endpoint=http://host:port implies secure=false; the canonical
		// URL is the same whichever form was used.
		var urls []string
		for _, u := range []string{
			"s3://forms/p?endpoint=http://" + ep,
			"s3://forms/p/?secure=false&endpoint=" + ep,
			"s3://forms/p?endpoint=http://" + ep + "/",
			"s3://forms/p?endpoint=HTTP://" + ep, // was taken for https
			"s3://forms/p?endpoint=http://" + ep + "&secure=false",
		} {
			s, err := Open(ctx, u, creds)
			if err != nil {
				t.Fatalf("Open(%q): %v", u, err)
			}
			urls = append(urls, s.URL())
		}
		if len(slices.Compact(slices.Clone(urls))) != 1 {
			t.Errorf("canonical URLs differ: %q", urls)
		}
	})

	t.Run("WrongCredentials", func(t *testing.T) {
		for name, opt := range map[string]Option{
			"wrong secret":     WithCredentials(ak, "not-the-secret"),
			"unknown key":      WithCredentials("nobody", "not-the-secret"),
			"secret truncated": WithCredentials(ak, sk[:len(sk)-1]),
		} {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			start := time.Now()
			_, err := Open(ctx, "s3://msjfarm-conf?endpoint="+ep+"&secure=false", opt)
			cancel()
			if err == nil {
				t.Fatalf("%s: Open succeeded", name)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("%s: Open took %v to fail; want a prompt error", name, d)
			}
			if msg := err.Error(); !strings.Contains(msg, "check the credentials") || !strings.Contains(msg, "msjfarm-conf") {
				t.Errorf("%s: unclear error: %v", name, err)
			} else {
				t.Logf("%s: %v", name, err)
			}
		}
	})
}

// TestS3OpenErrors needs no server: bad URLs and unreachable endpoints fail
// clearly and promptly.
func TestS3OpenErrors(t *testing.T) {
	clearCredentialEnv(t)
	ctx := context.Background()
	creds := WithCredentials("ak", "sk")
	for _, tc := range []struct{ url, want string }{
		{"s3:///prefix?endpoint=127.0.0.1:1", "missing bucket"},
		// secure=false overrode https:// without a word (plain HTTP where
		// TLS was written), and any scheme but http was taken for https.
		{"s3://bkt?endpoint=https://127.0.0.1:1&secure=false", "the endpoint's scheme says https and secure=false says otherwise"},
		{"s3://bkt?endpoint=http://127.0.0.1:1&secure=true", "the endpoint's scheme says http and secure=true says otherwise"},
		{"s3://bkt?endpoint=ftp://127.0.0.1:1", `endpoint scheme "ftp": want http:// or https://`},
		{"s3://b?endpoint=127.0.0.1:1&secure=maybe", "secure"},
		{"s3://b?endpoint=127.0.0.1:1&bogus=1", `unknown URL parameter "bogus"`},
		{"s3://user:pw@b?endpoint=127.0.0.1:1", "credentials in the URL"},
		{"s3://b/a/../c?endpoint=127.0.0.1:1", "bad prefix"},
		// A bad bucket name is refused before the network is tried (it
		// would be a host name: "no such host").
		{"s3://Bad_Bucket?endpoint=127.0.0.1:1", "s3://Bad_Bucket: not a valid bucket name"},
		{"s3://b?endpoint=127.0.0.1:1", "s3://b: not a valid bucket name: Bucket name cannot be shorter than 3 characters"},
	} {
		_, err := Open(ctx, tc.url, creds)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) = %v; want error containing %q", tc.url, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw@") {
			t.Errorf("Open(%q) error leaks the password: %v", tc.url, err)
		}
	}
	if _, err := Open(ctx, "s3://bkt?endpoint=127.0.0.1:1&secure=false"); err == nil || !strings.Contains(err.Error(), "no S3 credentials") {
		t.Errorf("Open without credentials = %v", err)
	}
	// Half of msjfarm's pair: another pair of the environment was used in
	// its place, another identity, without a word.
	t.Setenv("MSJFARM_S3_ACCESS_KEY", "someotheruser")
	t.Setenv("AWS_ACCESS_KEY_ID", "admin")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "admin-secret")
	if _, err := Open(ctx, "s3://bkt?endpoint=127.0.0.1:1&secure=false"); err == nil ||
		!strings.Contains(err.Error(), "MSJFARM_S3_ACCESS_KEY is set and MSJFARM_S3_SECRET_KEY is not: set both") {
		t.Errorf("Open with half a pair = %v", err)
	}
	t.Setenv("MSJFARM_S3_ACCESS_KEY", "")

	// Nothing listens on the endpoint: the error arrives within the
	// caller's deadline instead of after minio-go's full retry schedule.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err = Open(ctx, "s3://msjfarm-dead?endpoint="+dead+"&secure=false", creds)
	if err == nil {
		t.Fatal("Open of a dead endpoint succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open of a dead endpoint took %v", d)
	}
	t.Logf("dead endpoint: %v", err)
}

// TestCheckURL: a store value is checked before anything is contacted,
// and no error repeats a secret it holds. Each case was, before: the
// endpoint's user:password printed with the store's URL and stored in the
// campaign's manifest and report; a URL that does not parse printed whole
// (url.Parse quotes it); a fragment dropped; s3:/…, file:/… and host:port
// taken as local directories of that name; a file URL's user ignored.
func TestCheckURL(t *testing.T) {
	const secret = "Sup3rS3cr3t"
	for _, tc := range []struct{ url, want string }{
		{"s3://farm?endpoint=admin:" + secret + "@127.0.0.1:9000&secure=false", "endpoint: it holds a user name or password"},
		{"s3://farm?endpoint=http://admin:" + secret + "@127.0.0.1:9000", "endpoint: it holds a user name or password"},
		{"s3://farm?endpoint=127.0.0.1:9000/x", `"127.0.0.1:9000/x" is not host:port`},
		{"s3://farm?endpoint=127.0.0.1:99999", `port "99999" is not in 1..65535`},
		{"s3://farm?endpoint=127.0.0.1:9000#part", "a URL fragment"},
		{"s3://admin:" + secret + "/x@farm?endpoint=h:1", "the store URL (s3://…) does not parse"},
		{"file://admin:" + secret + "@localhost/tmp/x", "a file URL takes no user name or password"},
		{"s3:/farm?endpoint=127.0.0.1:9000", `a store starting "s3:" reads as a URL without its "//"`},
		{"file:/tmp/x", `a store starting "file:" reads as a URL without its "//"`},
		{"127.0.0.1:9000", `a store "127.0.0.1:9000" reads as a server's host:port`},
		{"minio:9000/bucket", `a store "minio:9000" reads as a server's host:port`},
		{"data\n", `the store value holds a control character ('\n' at byte 4`},
		{"s3://farm?endpoint=h:1\r\n", `control character ('\r' at byte 22`},
	} {
		err := CheckURL(tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckURL(%q) = %v; want an error containing %q", tc.url, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("CheckURL(%q) repeats the secret: %v", tc.url, err)
		}
		if _, oerr := Open(context.Background(), tc.url, NoCreate()); oerr == nil || err != nil && oerr.Error() != err.Error() {
			t.Errorf("Open(%q) = %v, not CheckURL's error", tc.url, oerr)
		}
	}
	for _, ok := range []string{"./s3:farm", "/tmp/a:b", "my data", "data", "s3://farm?endpoint=127.0.0.1:9000&secure=false", "file:///tmp/x"} {
		if err := CheckURL(ok); err != nil {
			t.Errorf("CheckURL(%q) = %v, want nil", ok, err)
		}
	}
}

// TestS3CertificateReasons: an HTTPS endpoint whose certificate this
// machine does not trust is named so, with the flag that fixes it; an
// https URL at an http server is named too. Both said "network error".
func TestS3CertificateReasons(t *testing.T) {
	clearCredentialEnv(t)
	creds := WithCredentials("ak", "sk")
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	for _, c := range []struct{ url, want string }{
		{"s3://certs?endpoint=" + strings.TrimPrefix(tlsSrv.URL, "https://"), "signed by an authority this machine does not trust (give its CA: --s3-ca"},
		{"s3://certs?endpoint=" + strings.TrimPrefix(plain.URL, "http://"), "the server does not speak TLS"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := Open(ctx, c.url, creds)
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%s) = %v; want %q", c.url, err, c.want)
		}
	}
}
