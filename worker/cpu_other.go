//go:build !linux

package worker

import "time"

func threadCPU() (time.Duration, bool) { return 0, false }
