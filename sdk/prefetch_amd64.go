package sdk

import "unsafe"

// prefetch asks the processor to bring the cache line at p into the cache
// (PREFETCHT0): a hint, which never faults and never changes a result.
//
//go:noescape
func prefetch(p unsafe.Pointer)
