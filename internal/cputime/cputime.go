// Package cputime reads the CPU time of the calling OS thread: the one clock
// behind every cpu_seconds msjfarm records, whether a replication ran inside
// the worker or in a plugin process, so the two runners' numbers compare.
//
// On Linux it is clock_gettime(CLOCK_THREAD_CPUTIME_ID), which the kernel
// keeps to the nanosecond from the scheduler's own accounting. The
// alternative, getrusage(RUSAGE_THREAD), is sampled at the scheduler tick
// and lags by up to a tick or more: a replication of a few milliseconds can
// read 0. Elsewhere there is no per-thread clock and Thread reports false.
//
// The caller locks its goroutine to the OS thread (runtime.LockOSThread)
// around the measured span; otherwise the two readings may come from
// different threads and their difference means nothing.
package cputime

import "time"

// Thread returns the CPU time (user + system) the calling OS thread has used
// so far, and whether it could be measured on this platform.
func Thread() (time.Duration, bool) { return thread() }

// Process returns the CPU time (user + system) the whole process has used
// so far (all its threads), and whether it could be measured: the clock
// for a measurement that runs one thing at a time in this process, where
// a shared machine's other processes must not count.
func Process() (time.Duration, bool) { return process() }
