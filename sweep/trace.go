package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaxFileSize bounds a sweep file (and the content Parse accepts): a sweep
// names its axes, not its points, so anything near the limit is a mistake
// or an attack, and it is refused before it is parsed.
const MaxFileSize = 4 << 20

// ReadTraceFile reads the trace a sweep names in trace.file, on the
// submitting machine, and pins it by content: f.Trace.SHA256 and Size are
// set from what was read, and the bytes are returned for upload to
// storage (storage.PutTrace). It is the only reader of trace.file: the
// coordinator and the workers see the sha256, never the path.
//
// limit bounds the size in bytes (<= 0: no limit). A device, FIFO,
// directory or anything else that is not a regular file is refused
// without being read, so /dev/zero or a named pipe fails at once with an
// error naming trace.file. A sha256 or size given in the sweep must match
// the file. With no trace, or a trace given by sha256 alone (already in
// storage), it returns nil.
func ReadTraceFile(f *File, limit int64) ([]byte, error) {
	data, err := readTraceFile(f, limit)
	if err != nil {
		return nil, f.src.locate(err)
	}
	return data, nil
}

func readTraceFile(f *File, limit int64) ([]byte, error) {
	if f.Trace == nil {
		return nil, nil
	}
	if f.Trace.File == "" {
		if f.Trace.SHA256 == "" {
			return nil, fmt.Errorf("trace: give file (an SWF file) or the sha256 and size of a trace already in storage")
		}
		return nil, nil
	}
	data, err := readLimited(f.Trace.File, limit, "trace.file")
	if err != nil {
		return nil, err
	}
	s := sha256.Sum256(data)
	sum := hex.EncodeToString(s[:])
	if f.Trace.SHA256 != "" && f.Trace.SHA256 != sum {
		return nil, fmt.Errorf("trace.sha256: the sweep says %s, but trace.file %s has sha256 %s", f.Trace.SHA256, f.Trace.File, sum)
	}
	if f.Trace.Size != 0 && f.Trace.Size != int64(len(data)) {
		return nil, fmt.Errorf("trace.size: the sweep says %d, but trace.file %s has %d bytes", f.Trace.Size, f.Trace.File, len(data))
	}
	f.Trace.SHA256, f.Trace.Size = sum, int64(len(data))
	return data, nil
}

// readLimited reads the regular file at path, refusing anything else and
// anything over limit bytes (<= 0: no limit); what names the file in
// errors (a sweep field). The file is opened non-blocking, so a path
// swapped for a FIFO between the check and the open cannot hang the
// reader, and checked again on the open descriptor.
func readLimited(path string, limit int64, what string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := regular(fi, limit, what, path); err != nil {
		return nil, err
	}
	fd, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer fd.Close()
	if fi, err = fd.Stat(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := regular(fi, limit, what, path); err != nil {
		return nil, err
	}
	var r io.Reader = fd
	if limit > 0 {
		r = io.LimitReader(fd, limit+1)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if limit > 0 && int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %s grew past the limit of %d bytes while being read", what, path, limit)
	}
	return data, nil
}

func regular(fi os.FileInfo, limit int64, what, path string) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %s is %s, not a regular file: refused without reading it", what, path, kind(fi.Mode()))
	}
	if limit > 0 && fi.Size() > limit {
		return fmt.Errorf("%s: %s has %d bytes, more than the limit of %d", what, path, fi.Size(), limit)
	}
	return nil
}

// kind names a file type for an error message.
func kind(m os.FileMode) string {
	switch {
	case m&os.ModeDir != 0:
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}
