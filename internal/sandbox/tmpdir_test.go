package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTmpUsage: a plugin's TMPDIR is counted whatever modes its plugin
// set, and through none of its symbolic links: a directory of mode 0300
// holding 1 MiB counts (plus a block for it and for each entry), and a
// link to a directory outside, of mode 0, is one entry whose target is
// neither counted nor has its mode changed. removeTmp removes the tree
// though a directory in it has mode 0. (As root, which reads everything,
// this checks the accounting and the links; cmd/msjfarm's
// TestPluginModesHideNothing runs the modes as another user.)
func TestTmpUsage(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "big"), make([]byte, 8<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(outside, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(outside, 0o700) })
	dark := filepath.Join(dir, "dark")
	if err := os.Mkdir(dark, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dark, "f"), make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dark, 0o300); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	// dark (a block), its file (1 MiB), the link (a block).
	if got, want := TmpUsage(dir, 1<<30), int64(1<<20+2*4096); got != want {
		t.Errorf("TmpUsage = %d, want %d", got, want)
	}
	if got := TmpUsage(dir, 4096); got <= 4096 {
		t.Errorf("TmpUsage with a limit of one block = %d, want past it", got)
	}
	if st, err := os.Stat(outside); err != nil || st.Mode().Perm() != 0 {
		t.Errorf("the link's target outside: %v, %v (want mode 0, untouched)", st.Mode(), err)
	}
	// Nested past MaxTmpDepth: past the quota, whatever they hold.
	deep := filepath.Join(dir, "deep")
	for range MaxTmpDepth + 1 {
		if err := os.Mkdir(deep, 0o700); err != nil {
			t.Fatal(err)
		}
		deep = filepath.Join(deep, "d")
	}
	if got := TmpUsage(dir, 1<<30); got <= 1<<30 {
		t.Errorf("TmpUsage with %d nested directories = %d, want past the limit", MaxTmpDepth+1, got)
	}
	if err := os.Chmod(dark, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0); err != nil {
		t.Fatal(err)
	}
	if err := removeTmp(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("removeTmp left %s: %v", dir, err)
	}
	if TmpUsage(dir, 1<<30) != 0 {
		t.Error("a TMPDIR gone counts")
	}
}
