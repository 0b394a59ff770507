package coordinator

import (
	"strings"
	"testing"
)

// Storage URLs in the lease (which anyone on the NATS system can read)
// carry no credentials.
func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"s3://AKIAKEY:s3cr3t@minio:9000/bucket?secret_key=s3cr3t": "s3://minio:9000/bucket",
		"https://user@minio.example/b":                            "https://minio.example/b",
		"/var/lib/msjfarm":                                        "/var/lib/msjfarm",
	} {
		got := redactURL(in)
		if got != want || strings.Contains(got, "s3cr3t") {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
