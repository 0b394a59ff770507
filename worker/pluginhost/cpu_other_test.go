//go:build !linux

package pluginhost_test

import "time"

func threadCPU() time.Duration { return 0 }
