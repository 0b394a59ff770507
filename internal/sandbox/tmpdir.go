package sandbox

import (
	"errors"
	"io/fs"
	"os"
)

// A plugin owns its private TMPDIR and whatever it makes there, and may
// set their modes: a directory of mode 0300 it may still fill by name,
// while no one but root may list it. A host running as the plugin's user
// (not root) then counted none of it against the TMPDIR quota (the
// hostile test plugin's diskdark: 256 MiB under a 32 MiB quota) and could
// not remove it (the files stayed on disk after the process exited). As
// that user, the host is the directories' owner too, so it gives each
// directory it cannot read back to its owner (mode 0700) and reads again.
// Every directory is opened relative to its parent (os.Root): a plugin
// that swaps a directory for a symbolic link cannot make the host change
// the mode of anything outside the TMPDIR, and a chain of nested
// directories costs one open a level, not one a level per level.

// MaxTmpDepth bounds how deep TmpUsage descends: a directory below it
// counts as past the quota. A policy needs no files at all; 65,536 nested
// directories fit under the default quota, and a walk that resolved each
// one's path from the TMPDIR took time quadratic in their depth.
const MaxTmpDepth = 64

// TmpUsage is the bytes under dir (a plugin's TMPDIR), each entry counted
// as at least one 4 KiB block (a million empty files fill a disk's
// inodes), stopping once past limit. A directory the host cannot read
// even after giving it mode 0700 (its plugin changing modes under the
// host's feet), or deeper than MaxTmpDepth, counts as past limit: an
// honest plugin hides nothing from its host.
func TmpUsage(dir string, limit int64) int64 {
	root, err := openTmp(dir)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return limit + 1
		}
		return 0 // gone
	}
	u := usage{limit: limit}
	u.walk(root, 0)
	root.Close()
	if u.over {
		return max(u.n, limit+1)
	}
	return u.n
}

// openTmp opens the TMPDIR dir as a root, giving it mode 0700 first if
// its plugin took its read or search bit.
func openTmp(dir string) (*os.Root, error) {
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return nil, fs.ErrNotExist // gone, or not a directory
	}
	if st.Mode().Perm()&0o500 != 0o500 {
		_ = os.Chmod(dir, 0o700)
	}
	return os.OpenRoot(dir)
}

// usage is TmpUsage's count so far.
type usage struct {
	n, limit int64
	over     bool // something could not be counted
}

func (u *usage) done() bool { return u.over || u.n > u.limit }

// walk counts the entries of the directory d, depth levels below the
// TMPDIR, and then those of its subdirectories.
func (u *usage) walk(d *os.Root, depth int) {
	f, err := d.Open(".")
	if err != nil {
		u.over = u.over || errors.Is(err, fs.ErrPermission)
		return
	}
	var subdirs []string
	for !u.done() {
		es, err := f.ReadDir(1024)
		for _, e := range es {
			info, err := e.Info()
			if errors.Is(err, fs.ErrPermission) {
				u.over = true // d's search bit taken back since it was opened
				break
			}
			size := int64(0)
			if err == nil && info.Mode().IsRegular() {
				size = info.Size()
			}
			u.n += max(size, 4096)
			if e.IsDir() {
				subdirs = append(subdirs, e.Name())
			}
		}
		if err != nil {
			u.over = u.over || errors.Is(err, fs.ErrPermission)
			break // io.EOF: done
		}
	}
	f.Close()
	for _, name := range subdirs {
		if u.done() {
			return
		}
		if depth+1 > MaxTmpDepth {
			u.over = true
			return
		}
		sub, err := openSub(d, name)
		if err != nil {
			u.over = u.over || errors.Is(err, fs.ErrPermission)
			continue
		}
		u.walk(sub, depth+1)
		sub.Close()
	}
}

// openSub opens the subdirectory name of d, giving it mode 0700 first if
// its mode refuses listing it or reading its entries' metadata.
func openSub(d *os.Root, name string) (*os.Root, error) {
	st, err := d.Lstat(name)
	if err != nil || !st.IsDir() {
		return nil, fs.ErrNotExist // gone, or no longer a directory
	}
	if st.Mode().Perm()&0o500 != 0o500 {
		_ = d.Chmod(name, 0o700)
	}
	sub, err := d.OpenRoot(name)
	if errors.Is(err, fs.ErrPermission) {
		_ = d.Chmod(name, 0o700)
		sub, err = d.OpenRoot(name)
	}
	return sub, err
}

// removeTmp removes a plugin's TMPDIR, whose process has exited, whatever
// modes it left on its directories.
func removeTmp(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	if root, err := openTmp(dir); err == nil {
		giveBack(root, 0)
		root.Close()
	}
	return os.RemoveAll(dir)
}

// giveBack gives every directory under d mode 0700, to MaxTmpDepth levels
// (os.RemoveAll descends past it on its own when modes allow).
func giveBack(d *os.Root, depth int) {
	f, err := d.Open(".")
	if err != nil {
		return
	}
	es, _ := f.ReadDir(-1)
	f.Close()
	for _, e := range es {
		if !e.IsDir() || depth >= MaxTmpDepth {
			continue
		}
		if sub, err := openSub(d, e.Name()); err == nil {
			giveBack(sub, depth+1)
			sub.Close()
		}
	}
}
