//go:build !linux

package storage

import (
	"errors"
	"os"
)

// Without syncfs(2) the local store syncs each file (haveSyncFS false).
func syncFS(*os.File) error { return errors.New("syncfs: not supported") }

const haveSyncFS = false
