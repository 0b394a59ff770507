package pluginhost

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/msjfarm/msjfarm/internal/wire"
)

// Digests caches binaries' sha256 by file identity — (device, inode, size,
// modification time in ns) — in memory and in a directory shared by every
// msjfarm process of the user, so that an unchanged binary is hashed once
// per machine: every `msjfarm run` used to hash each of the ten ~20 MB
// family binaries, and msjfarm itself when it serves its own families
// (issue #18). A file rewritten in place gets a new modification time, and
// one replaced by rename a new inode, so either is hashed again.
//
// It also caches, by sha256, path and scope, the Info a binary answered,
// so that indexing the search path does not start every binary on it: the
// binary's content, the name it is run under and what it is run with (its
// environment and confinement, the scope: a program may read all three)
// determine its Info (policies, schemas, version, engine), and the
// registry then starts only the families a campaign uses. Without the
// scope, a plugin whose Info follows a variable of --plugin-env (the
// engine it declares, say) answered one worker's setting to every msjfarm
// process of the user: `submit`, run without that variable, read the
// worker's.
//
// A cache entry is only ever a hint of the file's identity: pinned binaries
// are verified again as they start (go-plugin's SecureConfig), and fetched
// ones are hashed as they are downloaded.
type Digests struct {
	dir   string // "" : memory only
	scope string // what the binaries are run with (Host.infoScope)

	mu   sync.Mutex
	mem  map[fileID]string
	info map[string]*Info // by infoKey
}

// infoKey names the cached Info of the binary with this sha256 at path,
// run with scope. An empty scope keys as before scopes were added.
func (d *Digests) infoKey(sha, path string) string {
	k := sha + "\x00" + path
	if d.scope != "" {
		k += "\x00" + d.scope
	}
	h := sha256.Sum256([]byte(k))
	return hex.EncodeToString(h[:])
}

type fileID struct {
	path       string
	dev, ino   uint64
	size, mtim int64
}

// NewDigests returns a digest cache persisted in dir ("": the user cache
// directory's msjfarm/digests; "off": not persisted).
func NewDigests(dir string) *Digests {
	switch dir {
	case "off":
		dir = ""
	case "":
		if d, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(d, "msjfarm", "digests")
		}
	}
	return &Digests{dir: dir, mem: map[fileID]string{}, info: map[string]*Info{}}
}

func identify(path string) (fileID, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	if !st.Mode().IsRegular() {
		return fileID{}, fmt.Errorf("not a regular file")
	}
	id := fileID{path: path, size: st.Size(), mtim: st.ModTime().UnixNano()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(sys.Dev), uint64(sys.Ino)
	}
	return id, nil
}

func (id fileID) name() string {
	return fmt.Sprintf("%x-%x-%x-%x", id.dev, id.ino, id.size, id.mtim)
}

// Sum returns the sha256 (hex) of the file at path, from the cache when
// the file's identity is unchanged.
func (d *Digests) Sum(path string) (string, error) {
	id, err := identify(path)
	if err != nil {
		return "", err
	}
	d.mu.Lock()
	sum, ok := d.mem[id]
	d.mu.Unlock()
	if ok {
		return sum, nil
	}
	if d.dir != "" {
		if b, err := os.ReadFile(filepath.Join(d.dir, "sha256", id.name())); err == nil && len(b) == 64 {
			sum = string(b)
			d.mu.Lock()
			d.mem[id] = sum
			d.mu.Unlock()
			return sum, nil
		}
	}
	if sum, err = Checksum(path); err != nil {
		return "", err
	}
	// Identity after hashing: a file that changed while being read is not
	// cached under either identity.
	if id2, err := identify(path); err != nil || id2 != id {
		return sum, nil
	}
	d.mu.Lock()
	d.mem[id] = sum
	d.mu.Unlock()
	if d.dir != "" {
		d.write(filepath.Join(d.dir, "sha256", id.name()), []byte(sum))
	}
	return sum, nil
}

// write stores data at path atomically (temporary file and rename), so
// that concurrent msjfarm processes never read half an entry. Failures
// only cost a later re-hash.
func (d *Digests) write(path string, data []byte) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), path) != nil {
		os.Remove(f.Name())
	}
}

// Info returns the cached Info of the binary with this sha256 at path (nil
// if none). Path, SHA256, PID and StartTime are the caller's to fill.
func (d *Digests) Info(sha, path string) *Info {
	key := d.infoKey(sha, path)
	d.mu.Lock()
	in, ok := d.info[key]
	d.mu.Unlock()
	if ok {
		return in
	}
	if d.dir == "" || len(sha) != 64 {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(d.dir, "info", key+".json"))
	if err != nil {
		return nil
	}
	in = new(Info)
	// check: a file an older msjfarm cached holds the plugin's text as it
	// answered it (a miss asks the binary again, which decodeInfo checks).
	if json.Unmarshal(b, in) != nil || in.Protocol != wire.ProtocolVersion || in.check() != nil {
		return nil
	}
	d.mu.Lock()
	d.info[key] = in
	d.mu.Unlock()
	return in
}

// PutInfo caches the Info the binary with this sha256 at path answered.
func (d *Digests) PutInfo(sha, path string, in *Info) {
	key := d.infoKey(sha, path)
	c := *in
	c.Path, c.PID, c.StartTime = "", 0, 0
	d.mu.Lock()
	d.info[key] = &c
	d.mu.Unlock()
	if d.dir == "" || len(sha) != 64 {
		return
	}
	if b, err := json.Marshal(&c); err == nil {
		d.write(filepath.Join(d.dir, "info", key+".json"), b)
	}
}
