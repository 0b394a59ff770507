//go:build !amd64 || amd64.v3

package rng

import "math"

// log01 is math.Log for a uniform variate u in (0, 1). On this architecture
// (or with GOAMD64=v3, where the compiler may fuse a multiply and an add)
// it is math.Log itself; log_amd64.go has why amd64 differs.
func log01(u float64) float64 { return math.Log(u) }
