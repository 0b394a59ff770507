package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/storage/miniotest"
)

// TestHostileTraceNotUploaded: a sweep that names /proc/self/environ (the
// submitter's environment, with its S3 secret) or /etc/shadow as its trace
// is refused by `msjfarm run` and `msjfarm submit` with exit 2 and an error
// naming trace.file, before anything reaches storage: the store — a local
// directory and a real MinIO bucket — holds no traces/ object afterwards,
// and the error does not quote the file. Before, the file was uploaded
// to traces/<sha256> first and only failed on a worker.
func TestHostileTraceNotUploaded(t *testing.T) {
	const secret = "hunter2-s3-secret-do-not-upload"
	t.Setenv("MSJFARM_TEST_SECRET", secret)
	ep, ak, sk := miniotest.Start(t)
	t.Setenv("MSJFARM_S3_ACCESS_KEY", ak)
	t.Setenv("MSJFARM_S3_SECRET_KEY", sk)
	stores := map[string]string{
		"local": filepath.Join(t.TempDir(), "data"),
		"minio": "s3://hostile?endpoint=" + ep + "&secure=false",
	}
	victims := []string{"/proc/self/environ"}
	if f, err := os.Open("/etc/shadow"); err == nil {
		f.Close()
		victims = append(victims, "/etc/shadow")
	}
	dir := t.TempDir()
	for sname, store := range stores {
		for i, victim := range victims {
			sw := filepath.Join(dir, sname+strings.ReplaceAll(victim, "/", "_")+".yaml")
			body := "name: hostile\nservers: 4\ntrace: {file: " + victim + "}\npolicies: [fcfs]\nreplications: 1\nrun: {arrivals: 10}\n"
			if err := os.WriteFile(sw, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"run", "--workers", "1", "-q", "--storage", store, sw},
				{"submit", "--nats-url", "nats://127.0.0.1:1", "--storage", store, sw},
			} {
				code, out, errOut := captured(t, func() int { return dispatch(args) })
				if code != 2 || !strings.Contains(errOut, "trace.file") || !strings.Contains(errOut, "not an SWF trace") {
					t.Errorf("%s %s %s: exit %d, stderr %q; want 2 and trace.file: ... not an SWF trace", sname, args[0], victim, code, errOut)
				}
				if !strings.Contains(errOut, sw+":3:") {
					t.Errorf("%s %s: the error does not give the sweep file's line: %q", sname, args[0], errOut)
				}
				if strings.Contains(out+errOut, secret) || strings.Contains(errOut, "root:") {
					t.Errorf("%s %s %s: output quotes the file: %q", sname, args[0], victim, out+errOut)
				}
			}
			_ = i
		}
		st, err := storage.Open(context.Background(), store, storage.WithCredentials(ak, sk))
		if err != nil {
			t.Fatal(err)
		}
		keys, err := st.List(context.Background(), "traces/")
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			t.Errorf("%s: uploaded %v", sname, keys)
		}
	}
}
