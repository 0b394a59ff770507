package bundle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/msjfarm/msjfarm/storage"
)

// countingStore counts the objects read from it.
type countingStore struct {
	storage.Store
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, k string) ([]byte, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, k)
}

// TestExportWithinReaderLimits: an archive that a reader would refuse at
// one of its Limits is refused as it is written, naming the limit, and at
// the limit itself it is written and read back. Before, nothing checked:
// a campaign of more than 2·10⁶ replications was exported (hours of it)
// into an archive every reader refused, "more than 4000000 members".
//
// The committed campaign exported whole has n members with its index
// (unsigned); the limits below are derived from that export.
func TestExportWithinReaderLimits(t *testing.T) {
	src := extract(t, committed, nil)
	id := src.Format.Campaign
	export := func(t *testing.T, st storage.Store, lim Limits) (string, *Summary, error) {
		t.Helper()
		file := filepath.Join(t.TempDir(), "a.msjar")
		f, err := os.Create(file)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := Export(t.Context(), st, id, f, ExportOptions{Limits: lim})
		if cerr := f.Close(); cerr != nil {
			t.Fatal(cerr)
		}
		return file, sum, err
	}
	file, whole, err := export(t, src.Store, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	members := whole.Members + 1 // the index
	x := extract(t, file, nil)
	index, _ := os.ReadFile(filepath.Join(x.Dir, IndexMember))
	largest := int64(len(index)) // every limit of one member holds for the index too
	for _, e := range x.Index.Members {
		largest = max(largest, e.Size)
	}
	keys, _ := src.Store.List(t.Context(), storage.CampaignPrefix(id))
	if members <= len(keys)+3 {
		t.Fatalf("%d members for %d campaign objects: the cases below need results stored by reference", members, len(keys))
	}

	// Exactly at each limit the archive is written and every reader
	// takes it.
	at := Limits{MaxMembers: members, MaxIndex: int64(len(index)), MaxMember: largest}
	if file, _, err := export(t, src.Store, at); err != nil {
		t.Fatalf("at the limits: %v", err)
	} else if _, err := Verify(file, nil, at); err != nil {
		t.Fatalf("read at the limits: %v", err)
	}

	for _, c := range []struct {
		name   string
		lim    Limits
		want   string
		noRead bool // refused before a result was read
	}{
		// Fewer members than the campaign's objects alone: known from the
		// listing.
		{"objects", Limits{MaxMembers: len(keys)}, "objects", true},
		// One member short: found as the last members are written.
		{"members", Limits{MaxMembers: members - 1}, "more than " + itoa(members-1) + " members", false},
		{"index", Limits{MaxIndex: int64(len(index)) - 1}, IndexMember, false},
		{"member", Limits{MaxMember: largest - 1}, "for one member", false},
		{"total", Limits{MaxTotal: whole.Bytes / 2}, "decompress to more than", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &countingStore{Store: src.Store}
			_, _, err := export(t, st, c.lim)
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "does not fit in one archive") {
				t.Fatalf("got %v, want ErrTooLarge naming %q", err, c.want)
			}
			// The limits a writer keeps are a reader's: the whole archive
			// is refused by a reader with these limits too.
			if _, rerr := Verify(file, nil, c.lim); rerr == nil {
				t.Fatalf("a reader with %+v takes the whole archive that the writer refused", c.lim)
			}
			// Results are 8 pointers and 8 records, the manifest, spec,
			// pins and summary four more: a refusal from the listing reads
			// only what readCampaign reads before it.
			if n := st.gets.Load(); c.noRead && n > 6 {
				t.Fatalf("refused after %d objects were read", n)
			}
		})
	}
}

func itoa(n int) string {
	b := []byte{}
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
