// Package prefetch asks the processor for a cache line ahead of its use.
//
// Go has no prefetch intrinsic outside the runtime, so on amd64 this is one
// assembly instruction pair (PREFETCHT0 of the first and of the 89th byte,
// which covers a sim.Job of 96 bytes wherever it falls across lines); a
// call costs about a nanosecond, worth it only where the line is likely
// cold: a job that waited behind thousands of others. A prefetch is a hint,
// never faults and never changes a result.
package prefetch

import "unsafe"

// Line prefetches the bytes at p and p+88 into every cache level.
//
//go:noescape
func Line(p unsafe.Pointer)
