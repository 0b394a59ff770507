package storage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestID: a store names itself once; the same directory under another
// URL (a symbolic link) has the same identity, another directory another,
// concurrent first askers agree, and a damaged identity is an error naming
// its object, never replaced.
func TestID(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func(u string) Store {
		t.Helper()
		s, err := Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open(dir)
	var wg sync.WaitGroup
	ids := make([]string, 16)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := ID(ctx, s)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || !ValidID(id) {
			t.Fatalf("concurrent first askers got %q", ids)
		}
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if id, err := ID(ctx, open(link)); err != nil || id != ids[0] {
		t.Errorf("through a symbolic link: %q, %v; want %q", id, err, ids[0])
	}
	if id, err := ID(ctx, open(t.TempDir())); err != nil || id == ids[0] || !ValidID(id) {
		t.Errorf("another directory: %q, %v", id, err)
	}
	if err := os.WriteFile(filepath.Join(dir, IDKey), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ID(ctx, s)
	if err == nil || !strings.Contains(err.Error(), `"store-id" is not 24 hex digits`) {
		t.Fatalf("damaged identity: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, IDKey)); string(data) != "mine\n" {
		t.Errorf("damaged identity replaced: %q", data)
	}
}
