package sandbox

import "golang.org/x/sys/unix"

// Undumpable makes this process non-dumpable (prctl PR_SET_DUMPABLE 0):
// its /proc/<pid>/environ, mem, maps, fd and the like then belong to root,
// and another process of its user may neither read them nor ptrace it.
//
// It is for the case the sandbox does not cover: a plugin running as the
// msjfarm process's own user without Landlock (--plugin-sandbox off or
// best-effort on a kernel without it, as on many clusters' kernels, where
// workers run as the researcher) read /proc/<worker>/environ, the S3 and
// NATS secrets a worker configured by its environment holds. msjfarm calls
// it at start in every process but the one serving a built-in family as a
// plugin (whose /proc the host reads to watch it). A process's own /proc
// stays its own, and a plugin's execve makes the plugin dumpable again.
// Core dumps of msjfarm itself are off with it.
func Undumpable() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
