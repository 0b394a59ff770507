package sim

import (
	"testing"
	"unsafe"
)

// TestJobHotLine pins the fields a move touches (see Job) to bytes 32–63
// of the struct, the half line that is in one cache line whether the Job
// starts at a line or in the middle of one (Jobs are 96 bytes, allocated
// in 64-byte-aligned arrays). A field moved out of it would make every
// other job's preemption or start read a second line.
func TestJobHotLine(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layout is chosen for 64-bit targets (a Job is 88 bytes with 4-byte pointers)")
	}
	var j Job
	hot := []struct {
		name       string
		off, width uintptr
	}{
		{"remaining", unsafe.Offsetof(j.remaining), unsafe.Sizeof(j.remaining)},
		{"started", unsafe.Offsetof(j.started), unsafe.Sizeof(j.started)},
		{"need", unsafe.Offsetof(j.need), unsafe.Sizeof(j.need)},
		{"heapIdx", unsafe.Offsetof(j.heapIdx), unsafe.Sizeof(j.heapIdx)},
		{"preempted", unsafe.Offsetof(j.preempted), unsafe.Sizeof(j.preempted)},
		{"state", unsafe.Offsetof(j.state), unsafe.Sizeof(j.state)},
		{"delayed", unsafe.Offsetof(j.delayed), unsafe.Sizeof(j.delayed)},
		{"tagged", unsafe.Offsetof(j.tagged), unsafe.Sizeof(j.tagged)},
		{"suspended", unsafe.Offsetof(j.suspended), unsafe.Sizeof(j.suspended)},
	}
	for _, f := range hot {
		if f.off < 32 || f.off+f.width > 64 {
			t.Errorf("Job.%s at bytes %d–%d, want within 32–63 (one cache line for every Job)", f.name, f.off, f.off+f.width-1)
		}
	}
	// The claim itself: a chunk's Jobs, at 96-byte steps from a 64-byte
	// boundary, have bytes 32–63 in one line.
	for i := uintptr(0); i < 4; i++ {
		lo, hi := i*96+32, i*96+63
		if lo/64 != hi/64 {
			t.Errorf("Job %d of a chunk: bytes 32–63 span lines %d and %d", i, lo/64, hi/64)
		}
	}
	// And the allocation: a chunk (256 Jobs, 24576 bytes, a size class
	// of its own whose objects are page-aligned multiples of 8192 bytes
	// apart) starts at a line.
	var p jobPool
	for range 3 {
		p.get()
	}
	for _, c := range p.chunks {
		if a := uintptr(unsafe.Pointer(&c[0])) % 64; a != 0 {
			t.Errorf("a chunk of Jobs starts %d bytes into a cache line", a)
		}
	}
}
