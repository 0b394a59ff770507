package storage

import (
	"path/filepath"
	"testing"
)

func TestLocation(t *testing.T) {
	const key = "campaigns/c1/report/index.html"
	for _, c := range []struct{ store, key, want string }{
		{"s3://b?endpoint=minio:9000&secure=false", key, "s3://b/" + key + "?endpoint=minio:9000&secure=false"},
		{"s3://b/farm/one?endpoint=minio:9000", key, "s3://b/farm/one/" + key + "?endpoint=minio:9000"},
		{"s3://b/farm/?endpoint=minio:9000", "k", "s3://b/farm/k?endpoint=minio:9000"},
		{"s3://b/my%20farm?endpoint=h:1", "a b/c", "s3://b/my%20farm/a%20b/c?endpoint=h:1"},
		{"s3://b/x%2Fy?endpoint=h:1", "k", "s3://b/x%2Fy/k?endpoint=h:1"}, // an escaped slash stays one
		{"s3://b", "k", "s3://b/k"},
		{"s3://u:pw@b?endpoint=h:1&secret_key=sk", "k", "s3://u:xxxxx@b/k?endpoint=h:1&secret_key=xxxxx"},
		{"file:///var/lib/msjfarm", key, filepath.FromSlash("/var/lib/msjfarm/" + key)},
		{"/var/lib/msjfarm", key, filepath.FromSlash("/var/lib/msjfarm/" + key)},
	} {
		if got := Location(c.store, c.key); got != c.want {
			t.Errorf("Location(%q, %q) = %q, want %q", c.store, c.key, got, c.want)
		}
	}
}
