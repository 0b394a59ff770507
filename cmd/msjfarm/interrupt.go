package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/msjfarm/msjfarm/internal/scratch"
)

// cleanOnInterrupt makes an interrupt (SIGINT, SIGTERM) cancel the
// command's context (stop), remove the paths given to add, and exit 130
// once the command returns (done; at most 10 s later): report installed
// no handler, and Ctrl-C left its archive's extraction directory (a
// probe's: 954 MB) or its rendering directory behind. An extraction under
// way ends at its next member and removes its own directory.
func cleanOnInterrupt(cmd string, stop context.CancelFunc) (add func(path string), done func()) {
	var mu sync.Mutex
	var paths []string
	var signalled atomic.Bool
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	returned := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			signalled.Store(true)
			stop()
			select {
			case <-returned:
			case <-time.After(10 * time.Second):
			}
			mu.Lock()
			for _, p := range paths {
				os.RemoveAll(p)
			}
			scratch.Close()
			fmt.Fprintf(stderr, "msjfarm %s: interrupted; its temporary files were removed\n", cmd)
			os.Exit(130)
		case <-returned:
		}
	}()
	var once sync.Once
	add = func(path string) {
		mu.Lock()
		paths = append(paths, path)
		mu.Unlock()
	}
	done = func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(returned)
		})
		if signalled.Load() {
			select {} // the handler exits 130
		}
	}
	return add, done
}
