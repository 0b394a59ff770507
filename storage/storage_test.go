package storage

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testStore is the conformance suite every backend must pass. s should be
// empty; subtests use disjoint key namespaces.
func testStore(t *testing.T, s Store) {
	ctx := context.Background()

	t.Run("RoundTrip", func(t *testing.T) {
		key := "rt/campaigns/c1/spec.yaml"
		before := time.Now().Add(-2 * time.Second) // file systems and S3 round mtimes
		mustPut(t, s, key, []byte("name: one\n"))
		if got := mustGet(t, s, key); string(got) != "name: one\n" {
			t.Fatalf("Get = %q", got)
		}
		mustPut(t, s, key, []byte("name: two, longer\n")) // overwrite
		if got := mustGet(t, s, key); string(got) != "name: two, longer\n" {
			t.Fatalf("Get after overwrite = %q", got)
		}
		info, err := s.Stat(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if info.Key != key || info.Size != int64(len("name: two, longer\n")) {
			t.Errorf("Stat = %+v", info)
		}
		if info.ModTime.Before(before) || info.ModTime.After(time.Now().Add(2*time.Second)) {
			t.Errorf("Stat ModTime = %v, want about now", info.ModTime)
		}
		mustPut(t, s, "rt/empty", nil)
		if got := mustGet(t, s, "rt/empty"); len(got) != 0 {
			t.Errorf("empty object: Get = %q", got)
		}
		if info, err := s.Stat(ctx, "rt/empty"); err != nil || info.Size != 0 {
			t.Errorf("empty object: Stat = %+v, %v", info, err)
		}
	})

	t.Run("Children", func(t *testing.T) {
		for _, k := range []string{"ch/campaigns/a1/spec.yaml", "ch/campaigns/a1/results/t1.json", "ch/campaigns/b2/results/x/y.json", "ch/campaigns/top.json", "ch/other/z"} {
			mustPut(t, s, k, []byte("x"))
		}
		got, err := s.(ChildLister).ListChildren(ctx, "ch/campaigns/")
		if err != nil || !slices.Equal(got, []string{"a1", "b2"}) {
			t.Fatalf("ListChildren = %q, %v; want [a1 b2]", got, err)
		}
		if got, err := s.(ChildLister).ListChildren(ctx, "ch/none/"); err != nil || len(got) != 0 {
			t.Fatalf("ListChildren of nothing = %q, %v", got, err)
		}
		// The fallback through List gives the same.
		if got, err := Children(ctx, listOnly{s}, "ch/campaigns/"); err != nil || !slices.Equal(got, []string{"a1", "b2"}) {
			t.Fatalf("Children through List = %q, %v", got, err)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		mustPut(t, s, "nf/present/x", []byte("x"))
		for _, key := range []string{"nf/missing.json", "nf/present", "nf/present/x/below"} {
			_, err := s.Get(ctx, key)
			checkErr(t, s, "Get", key, err, ErrNotFound)
			_, err = s.Stat(ctx, key)
			checkErr(t, s, "Stat", key, err, ErrNotFound)
			dst := filepath.Join(t.TempDir(), "out")
			checkErr(t, s, "GetFile", key, s.GetFile(ctx, key, dst), ErrNotFound)
			if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("GetFile(%q) of a missing key created %s", key, dst)
			}
		}
	})

	t.Run("PutIfAbsent", func(t *testing.T) {
		key := ResultKey("pia", "task1")
		created, err := s.PutIfAbsent(ctx, key, []byte("first"))
		if err != nil || !created {
			t.Fatalf("first PutIfAbsent = %v, %v; want true, nil", created, err)
		}
		created, err = s.PutIfAbsent(ctx, key, []byte("second"))
		if err != nil || created {
			t.Fatalf("second PutIfAbsent = %v, %v; want false, nil", created, err)
		}
		if got := mustGet(t, s, key); string(got) != "first" {
			t.Fatalf("after second PutIfAbsent Get = %q, want %q (must not overwrite)", got, "first")
		}
	})

	t.Run("ConcurrentPutIfAbsent", func(t *testing.T) {
		const writers = 8
		for round := range 5 {
			key := ResultKey("cpia", fmt.Sprintf("task%d", round))
			var (
				wg      sync.WaitGroup
				start   = make(chan struct{})
				nCreate atomic.Int32
				winner  atomic.Int32
			)
			for w := range writers {
				wg.Go(func() {
					<-start
					created, err := s.PutIfAbsent(ctx, key, payload(w))
					if err != nil {
						t.Errorf("writer %d: %v", w, err)
						return
					}
					if created {
						nCreate.Add(1)
						winner.Store(int32(w))
					}
				})
			}
			close(start)
			wg.Wait()
			if n := nCreate.Load(); n != 1 {
				t.Fatalf("round %d: %d of %d concurrent PutIfAbsent calls reported created, want exactly 1", round, n, writers)
			}
			if got := mustGet(t, s, key); !bytes.Equal(got, payload(int(winner.Load()))) {
				t.Fatalf("round %d: stored object is not the creator's data", round)
			}
		}
	})

	t.Run("AtomicPut", func(t *testing.T) {
		// A writer alternates two large payloads; readers must only ever
		// see one of them in full.
		key := "atomic/obj"
		a, b := bytes.Repeat([]byte{'a'}, 1<<20), bytes.Repeat([]byte{'b'}, 1<<20+7)
		mustPut(t, s, key, a)
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() {
			defer cancel()
			for i := range 20 {
				data := a
				if i%2 == 0 {
					data = b
				}
				if err := s.Put(ctx, key, data); err != nil {
					t.Errorf("Put: %v", err)
					return
				}
			}
		})
		for range 3 {
			wg.Go(func() {
				for ctx.Err() == nil {
					got, err := s.Get(context.Background(), key)
					if err != nil {
						t.Errorf("Get during overwrite: %v", err)
						return
					}
					if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
						t.Errorf("Get during overwrite saw a partial/mixed object (%d bytes)", len(got))
						return
					}
				}
			})
		}
		wg.Wait()
	})

	t.Run("List", func(t *testing.T) {
		keys := []string{
			"list/campaigns/c1/results/t2.json",
			"list/campaigns/c1/results/t1.json",
			"list/campaigns/c1/spec.yaml",
			"list/campaigns/c1-x/spec.yaml",
			"list/campaigns/c10/spec.yaml",
			"list/plugins/fcfs/abc",
		}
		for _, k := range keys {
			mustPut(t, s, k, []byte(k))
		}
		for _, tc := range []struct {
			prefix string
			want   []string
		}{
			{"list/campaigns/c1/", []string{"list/campaigns/c1/results/t1.json", "list/campaigns/c1/results/t2.json", "list/campaigns/c1/spec.yaml"}},
			{"list/campaigns/c1/results/", []string{"list/campaigns/c1/results/t1.json", "list/campaigns/c1/results/t2.json"}},
			{"list/campaigns/c1", []string{"list/campaigns/c1-x/spec.yaml", "list/campaigns/c1/results/t1.json", "list/campaigns/c1/results/t2.json", "list/campaigns/c1/spec.yaml", "list/campaigns/c10/spec.yaml"}},
			{"list/campaigns/c1/spec.yaml", []string{"list/campaigns/c1/spec.yaml"}},
			{"list/plugins/", []string{"list/plugins/fcfs/abc"}},
			{"list/nothing/", nil},
			{"list/campaigns/c1/spec.yaml/", nil},
		} {
			got, err := s.List(ctx, tc.prefix)
			if err != nil {
				t.Fatalf("List(%q): %v", tc.prefix, err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("List(%q) =\n  %q\nwant\n  %q", tc.prefix, got, tc.want)
			}
			// Walk gives the same keys (in any order) without collecting
			// them: the store itself walks (local, S3), not List.
			if _, ok := s.(Walker); !ok {
				t.Fatalf("%T is not a Walker", s)
			}
			var walked []string
			if err := Walk(ctx, s, tc.prefix, func(k string) error { walked = append(walked, k); return nil }); err != nil {
				t.Fatalf("Walk(%q): %v", tc.prefix, err)
			}
			slices.Sort(walked)
			if !slices.Equal(walked, tc.want) {
				t.Errorf("Walk(%q) =\n  %q\nwant\n  %q", tc.prefix, walked, tc.want)
			}
		}
		// An error from fn stops the walk and is returned as is.
		stop := errors.New("stop")
		calls := 0
		if err := Walk(ctx, s, "list/", func(string) error { calls++; return stop }); err != stop || calls != 1 {
			t.Errorf("Walk with fn failing: err %v after %d calls, want %v after 1", err, calls, stop)
		}
		all, err := s.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.IsSorted(all) {
			t.Errorf("List(\"\") not sorted: %q", all)
		}
		for _, k := range keys {
			if !slices.Contains(all, k) {
				t.Errorf("List(\"\") misses %q", k)
			}
		}
		for _, k := range all {
			if strings.Contains(k, tmpMarker) {
				t.Errorf("List shows temporary file %q", k)
			}
		}
	})

	t.Run("Delete", func(t *testing.T) {
		key := "del/a/b"
		mustPut(t, s, key, []byte("x"))
		mustPut(t, s, "del/a/c", []byte("y"))
		if err := s.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		_, err := s.Get(ctx, key)
		checkErr(t, s, "Get after Delete", key, err, ErrNotFound)
		if err := s.Delete(ctx, key); err != nil {
			t.Errorf("second Delete: %v, want nil", err)
		}
		if got, _ := s.List(ctx, "del/"); !slices.Equal(got, []string{"del/a/c"}) {
			t.Errorf("List after Delete = %q", got)
		}
	})

	t.Run("LargeFile", func(t *testing.T) {
		const size = 20<<20 + 12345 // > one 16 MiB multipart part
		dir := t.TempDir()
		src := filepath.Join(dir, "plugin-bin")
		want := writeRandomFile(t, src, size)
		key := PluginKey("msfq", fmt.Sprintf("%x", want))
		if err := s.PutFile(ctx, key, src); err != nil {
			t.Fatal(err)
		}
		info, err := s.Stat(ctx, key)
		if err != nil || info.Size != size {
			t.Fatalf("Stat = %+v, %v; want size %d", info, err, size)
		}
		dst := filepath.Join(dir, "fetched")
		if err := s.GetFile(ctx, key, dst); err != nil {
			t.Fatal(err)
		}
		if got := fileSHA256(t, dst); got != want {
			t.Fatalf("GetFile content differs: sha256 %x, want %x", got, want)
		}
		if err := s.GetFile(ctx, key, dst); err != nil { // overwrite existing file
			t.Fatalf("GetFile over an existing file: %v", err)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 2 {
			t.Errorf("GetFile left extra files behind: %v", entries)
		}
		if err := s.PutFile(ctx, "large/missing-src", filepath.Join(dir, "nope")); err == nil {
			t.Error("PutFile of a missing source file succeeded")
		}
	})

	t.Run("BadKeys", func(t *testing.T) {
		src := filepath.Join(t.TempDir(), "src")
		if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(t.TempDir(), "dst")
		for _, key := range []string{
			"", "/abs/key", "../escape", "a/../../b", "a/..", "..", ".", "a/./b",
			"a//b", "a/", `a\b`, "a\x00b", tmpMarker + "x", "a/" + tmpMarker + "y",
		} {
			checkErr(t, s, "Put", key, s.Put(ctx, key, []byte("x")), ErrInvalidKey)
			_, err := s.PutIfAbsent(ctx, key, []byte("x"))
			checkErr(t, s, "PutIfAbsent", key, err, ErrInvalidKey)
			_, err = s.Get(ctx, key)
			checkErr(t, s, "Get", key, err, ErrInvalidKey)
			_, err = s.Stat(ctx, key)
			checkErr(t, s, "Stat", key, err, ErrInvalidKey)
			checkErr(t, s, "PutFile", key, s.PutFile(ctx, key, src), ErrInvalidKey)
			checkErr(t, s, "GetFile", key, s.GetFile(ctx, key, dst), ErrInvalidKey)
			checkErr(t, s, "Delete", key, s.Delete(ctx, key), ErrInvalidKey)
		}
		for _, prefix := range []string{"/", "../", "a/../", "a//"} {
			_, err := s.List(ctx, prefix)
			checkErr(t, s, "List", prefix, err, ErrInvalidKey)
		}
	})

	t.Run("Cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.Put(ctx, "cancel/x", []byte("x")); !errors.Is(err, context.Canceled) {
			t.Errorf("Put with cancelled context: %v, want context.Canceled", err)
		}
		if _, err := s.Get(ctx, "rt/empty"); !errors.Is(err, context.Canceled) {
			t.Errorf("Get with cancelled context: %v, want context.Canceled", err)
		}
	})
}

// checkErr checks that err is a *Error matching target and naming the key
// and the store.
func checkErr(t *testing.T, s Store, op, key string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s(%q) = %v, want %v", op, key, err, target)
		return
	}
	var se *Error
	if !errors.As(err, &se) || se.Key != key || se.Store != s.URL() {
		t.Errorf("%s(%q): error %#v does not name the key and store", op, key, err)
		return
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("%q", key)) || !strings.Contains(msg, s.URL()) {
		t.Errorf("%s(%q): message %q does not name the key and store", op, key, msg)
	}
}

func mustPut(t *testing.T, s Store, key string, data []byte) {
	t.Helper()
	if err := s.Put(context.Background(), key, data); err != nil {
		t.Fatal(err)
	}
}

func mustGet(t *testing.T, s Store, key string) []byte {
	t.Helper()
	data, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// payload is writer w's distinct result document.
func payload(w int) []byte {
	return fmt.Appendf(nil, `{"writer":%d,"pad":%q}`, w, strings.Repeat("x", 1000*w))
}

func writeRandomFile(t *testing.T, name string, size int64) [32]byte {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, h), rand.Reader, size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

func fileSHA256(t *testing.T, name string) [32]byte {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

func TestLocal(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := "file://" + filepath.ToSlash(dir); s.URL() != want {
		t.Errorf("URL() = %q, want %q", s.URL(), want)
	}
	testStore(t, s)

	// No temporary files survive the suite.
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tmpMarker) {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
	// Every object is a world-readable regular file below the root.
	st, err := os.Stat(filepath.Join(dir, "rt", "campaigns", "c1", "spec.yaml"))
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("object file mode: %v, %v; want 0644", st, err)
	}
}

func TestOpenLocalURLs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := Open(ctx, "file://"+filepath.ToSlash(dir)+"/store")
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, a, "k", []byte("v"))
	for _, u := range []string{
		a.URL(),
		filepath.Join(dir, "store"),
		"file://localhost" + filepath.ToSlash(dir) + "/store",
		dir + "/x/../store/",
	} {
		b, err := Open(ctx, u)
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		if b.URL() != a.URL() {
			t.Errorf("Open(%q).URL() = %q, want %q", u, b.URL(), a.URL())
		}
		if got := mustGet(t, b, "k"); string(got) != "v" {
			t.Errorf("Open(%q): Get = %q", u, got)
		}
	}

	// A relative path is relative to the working directory.
	t.Chdir(dir)
	r, err := Open(ctx, "rel/store")
	if err != nil {
		t.Fatal(err)
	}
	if want := "file://" + filepath.ToSlash(filepath.Join(dir, "rel", "store")); r.URL() != want {
		t.Errorf("relative: URL() = %q, want %q", r.URL(), want)
	}

	if err := os.WriteFile(filepath.Join(dir, "afile"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		"",
		"file://otherhost/data",
		"file://relative",
		"ftp://host/x",
		filepath.Join(dir, "afile"),
		// Parameters and fragments would be dropped (the store opened
		// would not be the one named).
		"file://" + filepath.ToSlash(dir) + "/store?secure=false",
		"file://" + filepath.ToSlash(dir) + "/store#x",
		"file://" + filepath.ToSlash(dir) + "/store?",
	} {
		if s, err := Open(ctx, bad); err == nil {
			t.Errorf("Open(%q) = %v, want an error", bad, s.URL())
		} else {
			t.Logf("Open(%q): %v", bad, err)
		}
	}
}

func TestLayout(t *testing.T) {
	for _, tc := range [][2]string{
		{CampaignSpecKey("c1"), "campaigns/c1/spec.yaml"},
		{ManifestKey("c1"), "campaigns/c1/manifest.json"},
		{ResultKey("c1", "t9"), "campaigns/c1/results/t9.json"},
		{ResultsPrefix("c1"), "campaigns/c1/results/"},
		{SummaryKey("c1"), "campaigns/c1/summary.csv"},
		{ReportPrefix("c1"), "campaigns/c1/report/"},
		{CampaignPrefix("c1"), "campaigns/c1/"},
		{PluginKey("msfq", "ab12"), "plugins/msfq/ab12"},
	} {
		if tc[0] != tc[1] {
			t.Errorf("got %q, want %q", tc[0], tc[1])
		}
	}
	for _, k := range []string{CampaignSpecKey("c"), ManifestKey("c"), ResultKey("c", "t"), SummaryKey("c"), PluginKey("p", "h")} {
		if err := ValidateKey(k); err != nil {
			t.Errorf("layout key %q invalid: %v", k, err)
		}
	}
	if id, ok := ResultTaskID("c1", ResultKey("c1", "t9")); !ok || id != "t9" {
		t.Errorf("ResultTaskID = %q, %v", id, ok)
	}
	for _, k := range []string{ResultKey("c2", "t9"), "campaigns/c1/results/x/y.json", "campaigns/c1/results/.json", "campaigns/c1/results/t9.txt"} {
		if id, ok := ResultTaskID("c1", k); ok {
			t.Errorf("ResultTaskID(%q) = %q, true; want false", k, id)
		}
	}
}

// TestCheckWritable: a store that cannot take a write is reported by
// CheckWritable naming the store; a writable one is left as it was. (The
// tests may run as root, whom a read-only directory does not stop, so the
// unwritable store is one whose probe directory is a file.)
func TestCheckWritable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckWritable(ctx, st); err != nil {
		t.Fatalf("writable store: %v", err)
	}
	if keys, _ := st.List(ctx, ""); len(keys) != 0 {
		t.Fatalf("probe left %v", keys)
	}
	dir2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir2, "runs"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, err = Open(ctx, dir2); err != nil {
		t.Fatal(err)
	}
	err = CheckWritable(ctx, st)
	if err == nil || !strings.Contains(err.Error(), "not writable") || !strings.Contains(err.Error(), st.URL()) {
		t.Fatalf("unwritable store: %v", err)
	}
}

// TestNoCreate: NoCreate opens an existing store and reports a missing one
// as ErrNotFound without creating it.
func TestNoCreate(t *testing.T) {
	ctx := context.Background()
	missing := filepath.Join(t.TempDir(), "none")
	if _, err := Open(ctx, missing, NoCreate()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing store: %v", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("NoCreate created %s", missing)
	}
	if _, err := Open(ctx, filepath.Dir(missing), NoCreate()); err != nil {
		t.Fatal(err)
	}
}

func TestStoredResultKey(t *testing.T) {
	const key = "abcdef0123456789abcdef0123456789" // 32 hex digits, as results/record.Key
	k := StoredResultKey(key)
	if k != "results/ab/"+key+".json" {
		t.Fatal(k)
	}
	if ck, ok := StoredResultContentKey(k); !ok || ck != key {
		t.Fatalf("%q %v", ck, ok)
	}
	// A user's files that only look like results: gc --delete on a
	// directory that was not a store removed the first two.
	for _, bad := range []string{"results/ab.json", "results/xy/" + key + ".json", "campaigns/c/results/t.json", "results/ab/abc/def.json",
		"results/20/2024-summary.json", "results/ab/abstract.json", "results/ab/abcdef.json", "results/ab/" + strings.ToUpper(key) + ".json"} {
		if _, ok := StoredResultContentKey(bad); ok {
			t.Errorf("%s parsed as a stored result", bad)
		}
	}
}

// TestLocalWalkPages walks a directory of more entries than a page
// (walkPage), with temporary files among them: every key once, no
// temporary file.
func TestLocalWalkPages(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n := 2*walkPage + 7
	for i := range n {
		mustPut(t, s, fmt.Sprintf("campaigns/c/results/t%04d.json", i), []byte("x"))
	}
	mustPut(t, s, "campaigns/c/spec.yaml", []byte("x"))
	tmp := filepath.Join(s.(*localStore).root, "campaigns", "c", "results", tmpMarker+"half")
	if err := os.WriteFile(tmp, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	if err := Walk(ctx, s, "campaigns/c/results/", func(k string) error { seen[k]++; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Errorf("Walk saw %d keys, want %d", len(seen), n)
	}
	for k, c := range seen {
		if c != 1 || !strings.HasPrefix(k, "campaigns/c/results/t") {
			t.Errorf("Walk gave %q %d times", k, c)
		}
	}
}

// listOnly hides a store's ListChildren.
type listOnly struct{ Store }
