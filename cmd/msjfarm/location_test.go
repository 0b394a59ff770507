package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/storage/miniotest"
)

// secretURLStore is a real store presented under a URL that carries
// credentials, as another Store implementation might.
type secretURLStore struct {
	storage.Store
	url string
}

func (s secretURLStore) URL() string { return s.url }

// TestStoredLocation: a stored object's printed location is a file path
// for local storage and, for S3, a URL with the key in its path and the
// query (the endpoint) after it, so that it parses back to the bucket,
// the object's path and the endpoint; credentials are masked.
func TestStoredLocation(t *testing.T) {
	ctx := context.Background()
	const key = "campaigns/c1/summary.csv"
	dir := filepath.Join(t.TempDir(), "my data")
	local, err := storage.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := storedLocation(local, key), filepath.Join(dir, "campaigns", "c1", "summary.csv"); got != want {
		t.Errorf("local: %q, want %q", got, want)
	}

	ep, ak, sk := miniotest.Start(t)
	for _, c := range []struct{ store, want string }{
		{"s3://locs?endpoint=" + ep + "&secure=false", "s3://locs/" + key + "?endpoint=" + ep + "&secure=false"},
		{"s3://locs/farm/one?secure=false&endpoint=" + ep + "&region=us-east-1", "s3://locs/farm/one/" + key + "?endpoint=" + ep + "&region=us-east-1&secure=false"},
	} {
		st, err := storage.Open(ctx, c.store, storage.WithCredentials(ak, sk))
		if err != nil {
			t.Fatal(err)
		}
		got := storedLocation(st, key)
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.store, got, c.want)
		}
		u, err := url.Parse(got)
		if err != nil || u.Host != "locs" || !strings.HasSuffix(u.Path, "/"+key) || u.Query().Get("endpoint") != ep {
			t.Errorf("%s: %q does not parse back to bucket, key and endpoint (%v)", c.store, got, err)
		}
	}
	sec := secretURLStore{local, "s3://AK:s3cr3t@locs/p?endpoint=" + ep + "&secret_key=s3cr3t"}
	if got, want := storedLocation(sec, key), "s3://AK:xxxxx@locs/p/"+key+"?endpoint="+ep+"&secret_key=xxxxx"; got != want {
		t.Errorf("with credentials: %q, want %q", got, want)
	}
}

// TestRunPrintsS3Locations: `msjfarm run` on S3 storage prints the
// summary's, precision table's and report's locations with the key in the
// URL's path and the endpoint query after it.
func TestRunPrintsS3Locations(t *testing.T) {
	ep, ak, sk := miniotest.Start(t)
	t.Setenv("MSJFARM_S3_ACCESS_KEY", ak)
	t.Setenv("MSJFARM_S3_SECRET_KEY", sk)
	sw := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(sw, []byte(precisionRunSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	store := "s3://runlocs/farm?endpoint=" + ep + "&secure=false"
	code, out := capture(t, func() int { return runRun([]string{"-workers", "2", "-q", "-storage", store, sw}) })
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	st, err := storage.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := st.List(context.Background(), "campaigns/")
	if err != nil || len(keys) == 0 {
		t.Fatalf("stored campaigns: %v %v", keys, err)
	}
	id := strings.Split(keys[0], "/")[1]
	at := func(key string) string { return "s3://runlocs/farm/" + key + "?endpoint=" + ep + "&secure=false" }
	for _, want := range []string{
		"\nsummary: " + at(storage.SummaryKey(id)) + "\n",
		" — " + at(archive.PrecisionKey(id)) + "\n",
		"\nreport: " + at(storage.ReportPrefix(id)+"index.html") + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("run output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, sk) {
		t.Errorf("run output shows the secret key:\n%s", out)
	}
}
