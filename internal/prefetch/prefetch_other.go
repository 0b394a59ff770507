//go:build !amd64

package prefetch

import "unsafe"

// Line is a no-op where no prefetch instruction is wired up.
func Line(unsafe.Pointer) {}
