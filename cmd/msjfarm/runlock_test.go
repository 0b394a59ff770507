package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/storage/miniotest"
)

// A second `msjfarm run` of a campaign another run holds on the same store
// is refused (exit 1), naming the holder, and runs nothing: two runs of
// the same sweep each ran the whole campaign, every replication computed
// twice. Once the holder lets go, the same command runs.
func TestRunCampaignLock(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(newcomerBase), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	st, err := storage.Open(t.Context(), data)
	if err != nil {
		t.Fatal(err)
	}
	// The campaign's id, from a dry run's plan.
	_, out, _ := captured(t, func() int { return dispatch([]string{"run", "--dry-run", "--storage", data, sw}) })
	id := strings.Fields(strings.TrimPrefix(out, "campaign "))[0]
	unlock, err := lockCampaign(t.Context(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut := captured(t, func() int { return dispatch([]string{"run", "-q", "--storage", data, sw}) })
	if code != 1 || !strings.Contains(errOut, "campaign "+id+" is being run on "+st.URL()+" by msjfarm run pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("while held: exit %d, want 1 naming the holder:\n%s", code, errOut)
	}
	if keys, _ := st.List(t.Context(), storage.ResultsPrefix(id)); len(keys) != 0 {
		t.Fatalf("while held: %d results stored", len(keys))
	}
	unlock()
	if code, _, errOut := captured(t, func() int { return dispatch([]string{"run", "-q", "--storage", data, sw}) }); code != 0 {
		t.Fatalf("once released: exit %d\n%s", code, errOut)
	}
}

// The same directory through a symbolic link is the same store: a run
// through the link was not refused and ran every task a second time.
func TestRunCampaignLockThroughLink(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(newcomerBase), 0o644); err != nil {
		t.Fatal(err)
	}
	data, link := filepath.Join(dir, "data"), filepath.Join(dir, "link")
	st, err := storage.Open(t.Context(), data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	_, out, _ := captured(t, func() int { return dispatch([]string{"run", "--dry-run", "--storage", data, sw}) })
	id := strings.Fields(strings.TrimPrefix(out, "campaign "))[0]
	unlock, err := lockCampaign(t.Context(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	code, _, errOut := captured(t, func() int { return dispatch([]string{"run", "-q", "--storage", link, sw}) })
	if code != 1 || !strings.Contains(errOut, "campaign "+id+" is being run on ") {
		t.Fatalf("through the link while held: exit %d, want 1 naming the holder:\n%s", code, errOut)
	}
}

// One MinIO under two endpoint names (127.0.0.1 and localhost) is one
// store (storage.ID): a run through the second name while the first holds
// the lock is refused. Before, the lock was by URL and both ran.
func TestRunCampaignLockS3TwoNames(t *testing.T) {
	ep, ak, sk := miniotest.Start(t)
	t.Setenv("MSJFARM_S3_ACCESS_KEY", ak)
	t.Setenv("MSJFARM_S3_SECRET_KEY", sk)
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(newcomerBase), 0o644); err != nil {
		t.Fatal(err)
	}
	port := ep[strings.LastIndex(ep, ":"):]
	first, second := "s3://lockfarm?endpoint=127.0.0.1"+port+"&secure=false", "s3://lockfarm?endpoint=localhost"+port+"&secure=false"
	st, err := storage.Open(t.Context(), first, storage.WithCredentials(ak, sk))
	if err != nil {
		t.Fatal(err)
	}
	_, out, _ := captured(t, func() int { return dispatch([]string{"run", "--dry-run", "--storage", first, sw}) })
	id := strings.Fields(strings.TrimPrefix(out, "campaign "))[0]
	unlock, err := lockCampaign(t.Context(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	code, _, errOut := captured(t, func() int { return dispatch([]string{"run", "-q", "--storage", second, sw}) })
	if code != 1 || !strings.Contains(errOut, "campaign "+id+" is being run on ") {
		t.Fatalf("through the second name while held: exit %d, want 1 naming the holder:\n%s", code, errOut)
	}
}
