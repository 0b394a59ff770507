package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// localStore keeps each object as a regular file below root. Writes go to a
// temporary file in the target's directory that is then renamed (Put) or
// hard-linked (PutIfAbsent: a file without a name where Linux's O_TMPFILE
// allows, writeUnnamed) into place, so readers never see partial files.
//
// A write returns once the object is durable: its data before its name (a
// crash never leaves a name with missing data, which PutIfAbsent would
// then keep for ever) and its name before the call returns (a worker acks
// a task only after its result is stored, so a result acknowledged is a
// result that survives a power cut). A writer alone in the store fsyncs
// its file, names it and fsyncs the directory. Writers that overlap (a
// worker's slots storing their results) share group commits instead,
// where the system has syncfs(2) (groupSync): two syncs of the file system
// cover every write waiting meanwhile, where an fsync of each file had cost
// the workers about half their CPU on short tasks. A sync of the whole
// file system costs more than an fsync of one file, so a lone writer (a
// report, an archive import) does not use it.
type localStore struct {
	root  string // absolute, cleaned
	url   string
	group *groupSync // nil: every writer fsyncs its own file and directory

	writers atomic.Int64 // writes in progress: more than one use the group
	// noUnnamed: PutIfAbsent writes named temporary files (writeUnnamed
	// found no O_TMPFILE or no /proc).
	noUnnamed atomic.Bool

	dirMu sync.Mutex
	dirs  map[string]bool // directories seen to exist (a stat saved per write)
}

// maxKnownDirs bounds localStore.dirs: a long-lived worker writes into one
// directory per campaign and 256 of stored results.
const maxKnownDirs = 4096

func openLocal(dir string, noCreate bool) (Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: local store %q: %w", dir, err)
	}
	if _, err := os.Stat(abs); noCreate && errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("storage: local store %s does not exist: %w", abs, ErrNotFound)
	}
	if outer := enclosingStore(abs); outer != "" {
		return nil, fmt.Errorf("storage: local store %s lies inside the store %s: give that one (a store inside another mixes their objects: the outer one lists the inner one's as its own)", abs, outer)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("storage: creating local store: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("storage: local store: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("storage: local store %s is not a directory", abs)
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	s := &localStore{root: abs, url: u.String(), dirs: map[string]bool{}}
	if haveSyncFS {
		s.group = newGroupSync(abs)
	}
	return s, nil
}

// enclosingStore is the nearest directory above dir that is a local
// store's root (it holds both campaigns/ and results/), or "". `run
// --storage data/campaigns/<id>` made a store inside a campaign of
// another, whose listing then held its files as results.
func enclosingStore(dir string) string {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if isDir(filepath.Join(d, "campaigns")) && isDir(filepath.Join(d, "results")) {
			return d
		}
		if parent := filepath.Dir(d); parent == d {
			return ""
		}
	}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// beginWrite counts a write in progress until end is called, and reports
// whether it shares group commits (it overlaps another write) or syncs
// its own file and directory.
func (s *localStore) beginWrite() (grouped bool, end func()) {
	n := s.writers.Add(1)
	return s.group != nil && n > 1, func() { s.writers.Add(-1) }
}

// named returns once the name just given to an object in dir is durable
// (and, grouped, everything else this process wrote before).
func (s *localStore) named(grouped bool, dir string) error {
	if grouped {
		return s.group.wait()
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (s *localStore) URL() string { return s.url }

// path validates key and returns its file name.
func (s *localStore) path(op, key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", invalidKey(op, key, s.url, err)
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

func (s *localStore) err(op, key string, err error) error {
	// A missing file, or a path through a regular file ("a/b" when "a" is
	// an object), means the object does not exist.
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		err = ErrNotFound
	}
	return keyErr(op, key, s.url, err)
}

func (s *localStore) Put(ctx context.Context, key string, data []byte) error {
	return s.put(ctx, "put", key, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

func (s *localStore) PutFile(ctx context.Context, key, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return keyErr("putfile", key, s.url, err)
	}
	defer f.Close()
	return s.put(ctx, "putfile", key, func(w io.Writer) error {
		_, err := io.Copy(w, ctxReader{ctx, f})
		return err
	})
}

func (s *localStore) put(ctx context.Context, op, key string, write func(io.Writer) error) error {
	name, err := s.path(op, key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return keyErr(op, key, s.url, err)
	}
	grouped, end := s.beginWrite()
	defer end()
	tmp, err := s.writeTemp(ctx, name, grouped, write)
	if err != nil {
		return keyErr(op, key, s.url, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return keyErr(op, key, s.url, err)
	}
	if err := s.named(grouped, filepath.Dir(name)); err != nil {
		return keyErr(op, key, s.url, err)
	}
	return nil
}

func (s *localStore) PutIfAbsent(ctx context.Context, key string, data []byte) (bool, error) {
	const op = "putifabsent"
	name, err := s.path(op, key)
	if err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, keyErr(op, key, s.url, err)
	}
	// Cheap early exit for the common "already done" case of a resumed
	// campaign; the Link below is what makes the operation race-free. An
	// object found is one another writer may not have made durable yet:
	// the caller acts on it as stored, so it waits for that too.
	grouped, end := s.beginWrite()
	defer end()
	if _, err := os.Lstat(name); err == nil {
		return false, s.existing(op, key, grouped, name)
	}
	// link(2) fails with EEXIST if the target exists, atomically: of any
	// number of concurrent writers exactly one creates the object, and the
	// object appears complete (it is the already written temp file).
	err = errNoUnnamed
	if !s.noUnnamed.Load() {
		if err = s.writeUnnamed(ctx, name, grouped, data); errors.Is(err, errNoUnnamed) {
			s.noUnnamed.Store(true)
		}
	}
	if errors.Is(err, errNoUnnamed) {
		var tmp string
		if tmp, err = s.writeTemp(ctx, name, grouped, func(w io.Writer) error {
			_, err := w.Write(data)
			return err
		}); err != nil {
			return false, keyErr(op, key, s.url, err)
		}
		defer os.Remove(tmp)
		err = os.Link(tmp, name)
	}
	if err != nil {
		var lerr *os.LinkError
		switch {
		case errors.Is(err, fs.ErrExist):
			return false, s.existing(op, key, grouped, name)
		case errors.As(err, &lerr):
			return false, keyErr(op, key, s.url, fmt.Errorf("%w (PutIfAbsent needs a file system with hard links)", err))
		}
		return false, keyErr(op, key, s.url, err)
	}
	if err := s.named(grouped, filepath.Dir(name)); err != nil {
		return true, keyErr(op, key, s.url, err)
	}
	return true, nil
}

// existing waits until the object name that PutIfAbsent found is durable
// (its data is: every writer syncs it before naming it).
func (s *localStore) existing(op, key string, grouped bool, name string) error {
	if err := s.named(grouped, filepath.Dir(name)); err != nil {
		return keyErr(op, key, s.url, err)
	}
	return nil
}

// writeTemp writes a complete temporary file next to name, its data durable
// (synced, or grouped: covered by a group commit), and returns its path.
func (s *localStore) writeTemp(ctx context.Context, name string, grouped bool, write func(io.Writer) error) (string, error) {
	f, err := s.createIn(filepath.Dir(name), func(dir string) (*os.File, error) {
		return os.CreateTemp(dir, tmpMarker+"*")
	})
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	err = s.fill(ctx, f, grouped, write)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// createIn creates a file in dir with create, making dir if it is missing.
func (s *localStore) createIn(dir string, create func(dir string) (*os.File, error)) (*os.File, error) {
	// Delete removes directories it empties, so a concurrent Delete may
	// remove dir (or a parent MkdirAll has just made) before the
	// temporary file is in it: both steps then fail with "not exist" (or
	// MkdirAll with "exists", when a directory it found made by another
	// writer was pruned before it looked again), and are tried again. Once
	// a named temporary file is in dir, dir is not empty and stays (an
	// unnamed one does not keep it: linkIn makes it again).
	for try := 0; ; try++ {
		var err error
		if try > 0 || !s.knownDir(dir, false) {
			err = os.MkdirAll(dir, 0o755)
		}
		if err == nil {
			var f *os.File
			if f, err = create(dir); err == nil {
				s.knownDir(dir, true)
				return f, nil
			}
		}
		if !(errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist)) || try == 100 {
			return nil, err
		}
	}
}

// fill writes f's content with write and makes it durable: synced, or,
// grouped, covered by a group commit.
func (s *localStore) fill(ctx context.Context, f *os.File, grouped bool, write func(io.Writer) error) error {
	err := write(f)
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil && !grouped {
		err = f.Sync()
	}
	if err == nil && grouped {
		err = s.group.wait()
	}
	return err
}

// writeUnnamed writes data to a file without a name in name's directory
// (O_TMPFILE), durable, and links it to name; errNoUnnamed (nothing
// written) where that cannot be done. Per object it saves the temporary
// name's creation and its unlink, which were about a third of the store's
// CPU on short tasks (docs/design.md, "Throughput"), and a crash leaves no
// temporary file behind. Its error is the link's (fs.ErrExist if name
// exists) or the write's.
func (s *localStore) writeUnnamed(ctx context.Context, name string, grouped bool, data []byte) error {
	dir := filepath.Dir(name)
	f, err := s.createIn(dir, openUnnamed)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := s.fill(ctx, f, grouped, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}); err != nil {
		return err
	}
	for try := 0; ; try++ {
		err = linkUnnamed(f, name)
		if !errors.Is(err, fs.ErrNotExist) || try == 100 {
			return err
		}
		// There is no /proc to link from, or a concurrent Delete pruned
		// dir (the unnamed file does not keep it): make it again and link
		// again. Whether dir exists does not tell the two apart: another
		// writer may have made it again since the link failed, and this
		// store then wrote named temporary files for the rest of its life
		// (TestLocalPutIfAbsentUnnamed saw it under -race).
		if _, perr := os.Stat(procFD); perr != nil {
			return errNoUnnamed
		}
		if err := os.MkdirAll(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
}

// errNoUnnamed: the system or file system has no files without a name
// (O_TMPFILE), or cannot link one (no /proc).
var errNoUnnamed = errors.New("no unnamed temporary files")

// knownDir reports whether dir was seen to exist (it may have been pruned
// since: creating a file in it then fails and writeTemp makes it again),
// or, if add, records that it exists.
func (s *localStore) knownDir(dir string, add bool) bool {
	s.dirMu.Lock()
	defer s.dirMu.Unlock()
	if !add {
		return s.dirs[dir]
	}
	if len(s.dirs) >= maxKnownDirs {
		clear(s.dirs)
	}
	s.dirs[dir] = true
	return true
}

func (s *localStore) Get(ctx context.Context, key string) ([]byte, error) {
	name, err := s.path("get", key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, keyErr("get", key, s.url, err)
	}
	if err := s.isFile("get", key, name); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, s.err("get", key, err)
	}
	return data, nil
}

// isFile returns ErrNotFound unless name is a regular file (a directory
// standing for a key prefix is not an object).
func (s *localStore) isFile(op, key, name string) error {
	st, err := os.Stat(name)
	if err != nil {
		return s.err(op, key, err)
	}
	if !st.Mode().IsRegular() {
		return keyErr(op, key, s.url, ErrNotFound)
	}
	return nil
}

func (s *localStore) GetFile(ctx context.Context, key, dst string) error {
	const op = "getfile"
	name, err := s.path(op, key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return keyErr(op, key, s.url, err)
	}
	if err := s.isFile(op, key, name); err != nil {
		return err
	}
	f, err := os.Open(name)
	if err != nil {
		return s.err(op, key, err)
	}
	defer f.Close()
	if err := writeFileAtomic(dst, ctxReader{ctx, f}, -1); err != nil {
		return keyErr(op, key, s.url, err)
	}
	return nil
}

func (s *localStore) Stat(ctx context.Context, key string) (Info, error) {
	name, err := s.path("stat", key)
	if err != nil {
		return Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return Info{}, keyErr("stat", key, s.url, err)
	}
	st, err := os.Stat(name)
	if err != nil {
		return Info{}, s.err("stat", key, err)
	}
	if !st.Mode().IsRegular() {
		return Info{}, keyErr("stat", key, s.url, ErrNotFound)
	}
	return Info{Key: key, Size: st.Size(), ModTime: st.ModTime()}, nil
}

func (s *localStore) List(ctx context.Context, prefix string) ([]string, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, invalidKey("list", prefix, s.url, err)
	}
	// Walk the deepest directory the prefix names completely and filter
	// by string prefix ("campaigns/c1/res" walks campaigns/c1).
	start := s.root
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		start = filepath.Join(s.root, filepath.FromSlash(prefix[:i]))
	}
	var keys []string
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) {
				return fs.SkipAll // nothing stored under the prefix
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), tmpMarker) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return nil, keyErr("list", prefix, s.url, err)
	}
	slices.Sort(keys)
	return keys, nil
}

func (s *localStore) Delete(ctx context.Context, key string) error {
	name, err := s.path("delete", key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return keyErr("delete", key, s.url, err)
	}
	if err := s.isFile("delete", key, name); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return keyErr("delete", key, s.url, err)
	}
	s.prune(filepath.Dir(name))
	return nil
}

// prune removes dir and its parents below the root while they are empty:
// a key prefix whose objects are all deleted (a report's staging area)
// leaves no empty directory behind, as it leaves nothing in an object
// store. Best effort: a directory that is not empty, or that another
// writer fills meanwhile, stays (writeTemp recreates one removed under it).
func (s *localStore) prune(dir string) {
	for dir != s.root && strings.HasPrefix(dir, s.root+string(filepath.Separator)) {
		if err := os.Remove(dir); err != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// writeFileAtomic copies r into a temporary file next to dst and renames it
// to dst once complete. If size >= 0, exactly size bytes must arrive.
func writeFileAtomic(dst string, r io.Reader, size int64) (err error) {
	dir := filepath.Dir(dst)
	f, err := os.CreateTemp(dir, "."+filepath.Base(dst)+".part-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	n, err := io.Copy(f, r)
	if err != nil {
		return err
	}
	if size >= 0 && n != size {
		return fmt.Errorf("short download: got %d of %d bytes", n, size)
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// ctxReader makes long copies stop when ctx is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Links lists (up to max) the symbolic links in a local store's tree, as
// keys; nil for other stores. Get and Stat follow a link, List and Walk
// do not: a campaign directory moved elsewhere and linked back was read by
// results and report and invisible to gc, which then deleted every result
// it refers to as unreferenced. gc refuses such a store.
func Links(ctx context.Context, st Store, max int) ([]string, error) {
	s, ok := st.(*localStore)
	if !ok {
		return nil, nil
	}
	// The store's own path may be a link (--storage stlink): only the
	// links inside it count.
	root, err := filepath.EvalSymlinks(s.root)
	if err != nil {
		return nil, err
	}
	var links []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			rel, _ := filepath.Rel(root, p)
			if links = append(links, filepath.ToSlash(rel)); len(links) >= max {
				return fs.SkipAll
			}
		}
		return nil
	})
	return links, err
}

// LocalRoot is the directory of a local store (false for other stores).
func LocalRoot(st Store) (string, bool) {
	s, ok := st.(*localStore)
	if !ok {
		return "", false
	}
	return s.root, true
}
