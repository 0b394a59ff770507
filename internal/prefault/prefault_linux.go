package prefault

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// populate asks the kernel to map b's pages now (Linux 5.14 and later;
// older kernels answer EINVAL and the pages fault in on first write as
// before). madvise wants a page-aligned start, so the first partial page is
// left to fault in.
func populate(b []byte) {
	const page = 4096
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b)))) & (page - 1)
	if off >= len(b) {
		return
	}
	_ = unix.Madvise(b[off:], unix.MADV_POPULATE_WRITE)
}
