//go:build !linux

package cputime

import "time"

// thread has no per-thread CPU clock to read off Linux; callers record the
// CPU time as unknown rather than as zero.
func thread() (time.Duration, bool) { return 0, false }

// process: off Linux the process's CPU time is reported as unknown too.
func process() (time.Duration, bool) { return 0, false }
