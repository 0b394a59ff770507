package coordinator

import (
	"strings"
	"testing"
)

// Storage URLs in the lease (which anyone on the NATS system can read)
// carry no credentials but keep what tells storages apart: an S3 URL's
// endpoint is in its query.
func TestLeaseStorage(t *testing.T) {
	for in, want := range map[string]string{
		"s3://AKIAKEY:s3cr3t@bucket/farm?endpoint=minio:9000&secret_key=s3cr3t": "s3://AKIAKEY:xxxxx@bucket/farm?endpoint=minio:9000&secret_key=xxxxx",
		"s3://bucket?endpoint=minio:9000&secure=false":                          "s3://bucket?endpoint=minio:9000&secure=false",
		"https://s3cr3t@minio.example/b":                                        "https://xxxxx@minio.example/b",
		"file:///var/lib/msjfarm":                                               "file:///var/lib/msjfarm",
		"/var/lib/msjfarm":                                                      "/var/lib/msjfarm",
	} {
		got := leaseStorage(in)
		if got != want || strings.Contains(got, "s3cr3t") {
			t.Errorf("leaseStorage(%q) = %q, want %q", in, got, want)
		}
	}
	a, b := leaseStorage("s3://bucket?endpoint=a:9000"), leaseStorage("s3://bucket?endpoint=b:9000")
	if a == b {
		t.Errorf("one bucket on two endpoints recorded alike: %q", a)
	}
	a, b = leaseStorage("s3://bucket?endpoint=a:9000&secret_key=one"), leaseStorage("s3://bucket?endpoint=a:9000&secret_key=two")
	if a != b {
		t.Errorf("one storage with two secrets recorded differently: %q, %q", a, b)
	}
}
