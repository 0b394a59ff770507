//go:build !linux

package storage

import "os"

// Without O_TMPFILE PutIfAbsent writes a named temporary file.
func openUnnamed(string) (*os.File, error) { return nil, errNoUnnamed }

func linkUnnamed(*os.File, string) error { return errNoUnnamed }

// procFD is unused where linkUnnamed never links (writeUnnamed names it).
const procFD = "/proc/self/fd"
