package storage

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// A local store inside another (`--storage data/campaigns/<id>`) is
// refused, naming the outer one: it was made, and the outer store then
// listed its files among a campaign's results. A store beside another,
// or one not yet holding results, is not affected.
func TestNestedStoreRefused(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	outer := filepath.Join(root, "data")
	st, err := Open(ctx, outer)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{CampaignSpecKey("c1"), StoredResultKey("00aa")} {
		if err := st.Put(ctx, k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	for _, inner := range []string{filepath.Join(outer, "campaigns"), filepath.Join(outer, "campaigns", "c1"), filepath.Join(outer, "results", "x", "y")} {
		if _, err := Open(ctx, inner); err == nil || !strings.Contains(err.Error(), "lies inside the store "+outer) {
			t.Errorf("%s: %v", inner, err)
		}
	}
	for _, ok := range []string{outer, filepath.Join(root, "other")} {
		if _, err := Open(ctx, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
