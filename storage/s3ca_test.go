package storage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWithCABadFile: a CA file that is missing or holds no certificate is
// an error naming it, before any connection is tried.
func TestWithCABadFile(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		filepath.Join(t.TempDir(), "missing.pem"): "S3 CA certificate: open",
		notPEM: "S3 CA certificate " + notPEM + ": no PEM certificate",
	} {
		for _, opt := range []func() Option{func() Option { return WithCA(file) }, func() Option { t.Setenv(EnvS3CA, file); return NoCreate() }} {
			_, err := Open(context.Background(), "s3://bkt?endpoint=127.0.0.1:1", WithCredentials("ak", "sk"), opt())
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("CA %s: error %v, want %q", file, err, want)
			}
		}
	}
}
