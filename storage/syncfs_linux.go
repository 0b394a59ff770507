package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFS is syncfs(2): the file system holding f, data and metadata, on
// stable storage; since Linux 5.8 it fails if a writeback failed since
// the last syncfs of f.
func syncFS(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if serr = unix.Syncfs(int(fd)); serr != unix.EINTR {
				break
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return os.NewSyscallError("syncfs", serr)
	}
	return nil
}

const haveSyncFS = true
