package storage

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestGroupSyncCoversEveryWaiter: each wait returns only after a sync that
// began after the wait was called (so after the waiter's writes), and
// waiters arriving during one sync share the next one.
func TestGroupSyncCoversEveryWaiter(t *testing.T) {
	var writes atomic.Int64 // "writes" finished, in order
	var mu sync.Mutex
	var covered []int64 // per finished sync: the writes finished when it began
	first := make(chan struct{})
	release := make(chan struct{})
	var calls atomic.Int64
	g := newGroupSync("")
	g.sync = func() error {
		n := calls.Add(1)
		at := writes.Load()
		if n == 1 {
			close(first)
			<-release // hold the first sync while the others arrive
		}
		mu.Lock()
		covered = append(covered, at)
		mu.Unlock()
		return nil
	}
	const waiters = 20
	var wg sync.WaitGroup
	check := func() {
		defer wg.Done()
		mine := writes.Add(1)
		if err := g.wait(); err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		// The syncs finished so far: one of them began after our write.
		ok := false
		for _, c := range covered {
			ok = ok || c >= mine
		}
		if !ok {
			t.Errorf("write %d: wait returned, but no finished sync began after it (syncs began after %v writes)", mine, covered)
		}
	}
	wg.Add(1)
	firstDone := make(chan struct{})
	go func() { check(); close(firstDone) }()
	select {
	case <-first:
	case <-firstDone:
		t.Fatal("the first wait returned without syncing")
	}
	wg.Add(waiters - 1)
	for range waiters - 1 {
		go check()
	}
	// Let the held sync finish once every other waiter has at least
	// recorded its write (they may or may not have reached wait yet:
	// either way they need a later sync).
	for writes.Load() < waiters {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	// The first waiter's sync, then at most one sync per later waiter;
	// usually 2 in all (the 19 arriving during the first share one).
	if n := calls.Load(); n < 2 || n > waiters {
		t.Errorf("%d syncs for %d waiters", n, waiters)
	}
	t.Logf("%d syncs for %d waiters", calls.Load(), waiters)
}

// TestGroupSyncError: a failed sync is the error of every wait it was to
// cover; a later wait covered by a good sync succeeds.
func TestGroupSyncError(t *testing.T) {
	boom := errors.New("writeback failed")
	fail := true
	g := newGroupSync("")
	g.sync = func() error {
		if fail {
			fail = false
			return boom
		}
		return nil
	}
	if err := g.wait(); !errors.Is(err, boom) {
		t.Fatalf("first wait: %v, want %v", err, boom)
	}
	if err := g.wait(); err != nil {
		t.Fatalf("second wait: %v, want nil", err)
	}
}

// TestLocalWriteModes: a lone write syncs its own file and directory (no
// sync of the file system); a write overlapping another takes two group
// syncs (its data before its name, its name before it returns), and an
// object PutIfAbsent finds costs one (its name may not be durable yet).
func TestLocalWriteModes(t *testing.T) {
	st, err := openLocal(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*localStore)
	if s.group == nil {
		t.Skip("no syncfs here: every write syncs its own file")
	}
	var syncs atomic.Int64
	s.group.sync = func() error { syncs.Add(1); return syncDir(s.root) }
	ctx := t.Context()
	if _, err := s.PutIfAbsent(ctx, "a/lone.json", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if n := syncs.Load(); n != 0 {
		t.Errorf("lone PutIfAbsent: %d group syncs, want 0", n)
	}
	_, end := s.beginWrite() // another write in progress
	defer end()
	if _, err := s.PutIfAbsent(ctx, "a/overlapping.json", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "a/put.json", []byte("3")); err != nil {
		t.Fatal(err)
	}
	if n := syncs.Load(); n != 4 {
		t.Errorf("overlapping PutIfAbsent and Put: %d group syncs, want 2+2", n)
	}
	if created, err := s.PutIfAbsent(ctx, "a/lone.json", []byte("4")); created || err != nil {
		t.Fatalf("PutIfAbsent of an existing key: created %v, %v", created, err)
	}
	if n := syncs.Load(); n != 5 {
		t.Errorf("PutIfAbsent finding an object: %d group syncs in all, want 5", n)
	}
	for k, want := range map[string]string{"a/lone.json": "1", "a/overlapping.json": "2", "a/put.json": "3"} {
		if got, err := s.Get(ctx, k); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", k, got, err, want)
		}
	}
}
