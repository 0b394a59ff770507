// Command msjfarm-policy-flaky is the fault-injection suite's plugin: the
// policy flaky-fcfs schedules exactly like FCFS (so its results, and the
// campaign summary, are identical whether or not it misbehaved), but one
// replication per $FLAKY_DIR misbehaves mid-run when $FLAKY_MODE says so:
//
//	crash  a panic in a goroutine (the process dies with a Go stack trace)
//	exit   os.Exit(3) (the process vanishes without a word)
//	hang   sleeps for a day inside Arrive, ignoring every deadline
//
// "One replication" is enforced with an O_EXCL token file in $FLAKY_DIR,
// so the retry of the same task behaves: a farm that retries a task whose
// plugin died must end with the fault-free result. Without $FLAKY_MODE the
// plugin is a plain FCFS.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sdk"
)

func main() {
	sdk.Serve("flaky", "0.0.1", []sdk.Spec{{
		Name: "flaky-fcfs",
		Doc:  "FCFS that misbehaves once per $FLAKY_DIR when $FLAKY_MODE is crash, exit or hang (fault-injection tests).",
		New:  func() sdk.Policy { return &flaky{} },
	}})
}

type flaky struct {
	fcfs.FCFS
	armed bool // this replication holds the token and misbehaves
	after int
	n     int
}

// Init decides whether this replication is the one that misbehaves: the
// first one to create $FLAKY_DIR/token.
func (p *flaky) Init(s *sdk.System) error {
	p.n, p.armed = 0, false
	p.after = 2000
	if v, err := strconv.Atoi(os.Getenv("FLAKY_AFTER")); err == nil && v > 0 {
		p.after = v
	}
	mode, dir := os.Getenv("FLAKY_MODE"), os.Getenv("FLAKY_DIR")
	if mode != "" && dir != "" {
		f, err := os.OpenFile(filepath.Join(dir, "token"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%s pid %d at %s\n", mode, os.Getpid(), time.Now().UTC().Format(time.RFC3339Nano))
			f.Close()
			p.armed = true
		}
	}
	return p.FCFS.Init(s)
}

func (p *flaky) Arrive(s *sdk.System, j *sdk.Job) {
	p.n++
	if p.armed && p.n == p.after {
		switch os.Getenv("FLAKY_MODE") {
		case "crash":
			done := make(chan struct{})
			go func() { panic(fmt.Sprintf("flaky: deliberate crash at arrival %d", p.n)) }()
			<-done
		case "exit":
			os.Exit(3)
		case "hang":
			time.Sleep(24 * time.Hour)
		}
	}
	p.FCFS.Arrive(s, j)
}
