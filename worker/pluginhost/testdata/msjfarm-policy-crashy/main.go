// Command msjfarm-policy-crashy is a test plugin for worker/pluginhost: policies
// that crash the process, hang, run slowly or break the engine's rules, next
// to a well-behaved FCFS. If $CRASHY_MARKER names a file, every policy's
// Init appends a line to it, so a test can prove that nothing ran.
package main

import (
	"bytes"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sdk"
)

func main() {
	sdk.Serve("crashy", "0.0.1", append(append([]sdk.Spec{}, fcfs.Policies...), []sdk.Spec{
		{Name: "crash", Doc: "crashes the process (a panic in a goroutine) at arrival #after", New: func() sdk.Policy { return &bad{mode: "crash"} }},
		{Name: "hang", Doc: "spins forever in Arrive at arrival #after", New: func() sdk.Policy { return &bad{mode: "hang"} }},
		{Name: "slow", Doc: "sleeps 1 ms per arrival (honours deadlines)", New: func() sdk.Policy { return &bad{mode: "slow"} }},
		{Name: "double-start", Doc: "starts a job twice at arrival #after (a policy error)", New: func() sdk.Policy { return &bad{mode: "double"} }},
		{Name: "stdout", Doc: "writes 1 MiB without a newline and then 1 MiB of lines to its fd 1 at arrival #after, as a C library's printf would (go-plugin redirects os.Stdout, not the descriptor)", New: func() sdk.Policy { return &bad{mode: "stdout"} }},
		{Name: "crash-pointer", Doc: "crashes the process (a panic in a goroutine) at arrival #after with a pointer as the panic's value, which Go prints as its address: an address that differs from process to process", New: func() sdk.Policy { return &bad{mode: "crash-pointer"} }},
	}...))
}

type bad struct {
	fcfs.FCFS
	mode  string
	after int
	n     int
}

func (p *bad) Params() []sdk.Param {
	return []sdk.Param{{Name: "after", Type: sdk.Int, Default: 100, Min: sdk.Bound(1), Max: sdk.Bound(1e6),
		Doc: "arrival at which to misbehave"}}
}

func (p *bad) Configure(v sdk.Values) error { p.after = v.Int("after"); return nil }

func (p *bad) Init(s *sdk.System) error {
	if m := os.Getenv("CRASHY_MARKER"); m != "" {
		f, err := os.OpenFile(m, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, "init", p.mode)
			f.Close()
		}
	}
	p.n = 0
	return p.FCFS.Init(s)
}

// spins counts the hung policy's iterations (so the loop is not empty).
var spins atomic.Int64

func (p *bad) Arrive(s *sdk.System, j *sdk.Job) {
	p.n++
	switch {
	case p.mode == "slow":
		time.Sleep(time.Millisecond)
	case p.n == p.after && p.mode == "crash":
		done := make(chan struct{})
		go func() { panic(fmt.Sprintf("crashy: deliberate crash at arrival %d", p.n)) }()
		<-done
	case p.n == p.after && p.mode == "crash-pointer":
		// As many allocations of the panic value's size before it as
		// the process id says, so that its address differs from one
		// process to the next, as a real policy's does when other
		// replications allocated first.
		kept := make([]*crashState, os.Getpid()%61+1)
		for i := range kept {
			kept[i] = &crashState{at: i}
		}
		// In a goroutine of its own, as "crash" does: the engine
		// recovers a panic in its own goroutine and fails the
		// replication; this one ends the process.
		done := make(chan struct{})
		go func() { panic(&crashState{at: p.n, kept: kept}) }()
		<-done
	case p.n == p.after && p.mode == "hang":
		for {
			spins.Add(1)
		}
	case p.n == p.after && p.mode == "stdout":
		long := bytes.Repeat([]byte("x"), 1<<20)
		lines := bytes.Repeat([]byte("a line of C library output\n"), (1<<20)/27)
		for _, b := range [][]byte{long, []byte("\n"), lines} {
			for len(b) > 0 {
				n, err := syscall.Write(1, b)
				if err != nil {
					panic(err)
				}
				b = b[n:]
			}
		}
	case p.n == p.after && p.mode == "double":
		p.FCFS.Arrive(s, j)
		s.Start(j)
		return
	}
	p.FCFS.Arrive(s, j)
}

// crashState is crash-pointer's panic value: a pointer to a type with no
// Error or String method, which the runtime prints as "(*main.crashState)
// 0xc...".
type crashState struct {
	at   int
	kept []*crashState
}
