package prefault

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident is the number of b's pages mapped in memory (mincore), b's
// start rounded down to its page.
func resident(t *testing.T, b []byte) int {
	t.Helper()
	off := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) & 4095)
	whole := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), -off)), len(b)+off)
	vec := make([]byte, (len(whole)+4095)/4096)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&whole[0])), uintptr(len(whole)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestSlicePopulates: the pages of a fresh 8-MiB buffer (2048 pages) are
// not mapped until written; after Slice they all are. A buffer whose pages
// the runtime had already mapped (reused heap) cannot tell: then the test
// is skipped.
func TestSlicePopulates(t *testing.T) {
	b := make([]byte, 8<<20)
	if n := resident(t, b); n > 0 {
		t.Skipf("%d of the fresh buffer's pages are already mapped", n)
	}
	Slice(b)
	if n := resident(t, b); n < 2048 {
		t.Fatalf("%d of 2048 pages mapped after Slice", n)
	}
	for _, c := range b {
		if c != 0 {
			t.Fatal("Slice changed the contents")
		}
	}
}

// TestSliceEdges: empty slices, and slices that do not start on a page
// (the partial first page is left to fault in).
func TestSliceEdges(t *testing.T) {
	Slice([]int(nil))
	Slice(make([]struct{}, 10))
	b := make([]byte, 3*4096)
	Slice(b[1:])
	Slice(b[4095:4097])
	for _, c := range b {
		if c != 0 {
			t.Fatal("Slice changed the contents")
		}
	}
}
