package storage

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openUnnamed opens a new file without a name in dir (open(2) with
// O_TMPFILE), for linkUnnamed to name once it is complete; errNoUnnamed
// if dir's file system (or the kernel) cannot.
func openUnnamed(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir, os.O_WRONLY|unix.O_TMPFILE, 0o644)
	if err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL) {
			return nil, errNoUnnamed
		}
		return nil, err
	}
	return f, nil
}

// procFD is where linkUnnamed finds an open file's name to link from.
const procFD = "/proc/self/fd"

// linkUnnamed gives f, opened by openUnnamed, the name name: linkat(2) of
// its /proc/self/fd entry, which fails with EEXIST if name exists, like
// link(2). A system without /proc fails with ENOENT although name's
// directory exists (PutIfAbsent then writes a named temporary file).
func linkUnnamed(f *os.File, name string) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		lerr = unix.Linkat(unix.AT_FDCWD, procFD+"/"+strconv.Itoa(int(fd)), unix.AT_FDCWD, name, unix.AT_SYMLINK_FOLLOW)
	}); err != nil {
		return err
	}
	if lerr != nil {
		return &os.LinkError{Op: "link", Old: f.Name() + " (unnamed)", New: name, Err: lerr}
	}
	return nil
}
