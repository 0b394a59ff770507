package simtest

import (
	"context"
	"errors"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

// SameTrace runs ref and got on w under cfg and reports the first decision
// where got's trace differs from ref's, the test named by name.
//
// The two traces are compared as they are made, never held whole: the long
// equivalence tests run 10⁷ arrivals and more, whose recorded trace (48
// bytes a record, several records an arrival) ran to gigabytes — 14.6 GB for
// one of them, killed on a 24 GiB host with the rest of the package running.
// The reference runs in a goroutine and hands its records over in batches
// of traceBatch, at most traceBatches of them in flight and recycled, so
// the comparison holds a few megabytes whatever the length of the run. When
// got differs, the reference is cancelled (through cfg.Context) rather than
// run to its end.
func SameTrace(t testing.TB, name string, w *sim.Workload, ref, got sim.Policy, cfg sim.Config) {
	t.Helper()
	parent := cfg.Context
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	s := newTraceStream()
	refErr := make(chan error, 1)
	go func() {
		c := cfg
		c.Context, c.Observer = ctx, s.send
		_, err := sim.Run(w, ref, c)
		s.end()
		refErr <- err
	}()
	stopped := false
	// stop lets the reference go and waits for it, so that nothing of it
	// runs on after the test (a policy may be reused by the next one).
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		s.stop()
		cancel()
		err := <-refErr
		if errors.Is(err, context.Canceled) && parent.Err() == nil {
			err = nil // cancelled here, after a difference was found
		}
		return err
	}
	defer func() { _ = stop() }()

	var n int64
	bad := false
	c := cfg
	c.Observer = func(e sim.TraceRecord) {
		if bad {
			return
		}
		want, ok := s.next()
		switch {
		case !ok:
			t.Errorf("%s: event %d: %+v, reference trace ended", name, n, e)
			bad = true
		case e != want:
			t.Errorf("%s: event %d: %+v, reference %+v", name, n, e, want)
			bad = true
		}
		n++
	}
	_, err := sim.Run(w, got, c)
	if err == nil && !bad {
		if want, ok := s.next(); ok {
			t.Errorf("%s: trace ended after %d events, reference goes on with %+v", name, n, want)
		}
	}
	if rerr := stop(); rerr != nil {
		t.Fatalf("%s: reference: %v", name, rerr)
	}
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

const (
	traceBatch   = 4096 // records a batch: 192 KiB
	traceBatches = 4    // batches in flight between the two runs
)

// traceStream carries one run's records to the goroutine that compares
// them, in order, through a fixed set of recycled batches.
type traceStream struct {
	full chan []sim.TraceRecord // filled batches, in order; closed at the end
	free chan []sim.TraceRecord // emptied batches, back to the sender
	done chan struct{}          // closed when the receiver stops listening

	buf []sim.TraceRecord // the batch being filled (sender side)
	cur []sim.TraceRecord // the batch being read (receiver side)
	pos int
}

func newTraceStream() *traceStream {
	s := &traceStream{
		full: make(chan []sim.TraceRecord, traceBatches),
		free: make(chan []sim.TraceRecord, traceBatches),
		done: make(chan struct{}),
	}
	for range traceBatches {
		s.free <- make([]sim.TraceRecord, 0, traceBatch)
	}
	return s
}

// send appends one record, handing the batch over when it is full. Once
// the receiver has stopped, records are dropped.
func (s *traceStream) send(e sim.TraceRecord) {
	if s.buf == nil {
		select {
		case <-s.done:
			return
		case s.buf = <-s.free:
		}
	}
	s.buf = append(s.buf, e)
	if len(s.buf) == traceBatch {
		s.flush()
	}
}

func (s *traceStream) flush() {
	if len(s.buf) == 0 {
		return
	}
	select {
	case s.full <- s.buf:
	case <-s.done:
	}
	s.buf = nil
}

// end hands over the last batch and closes the stream (sender side).
func (s *traceStream) end() {
	s.flush()
	close(s.full)
}

// next returns the next record, or false once the sender has ended and
// every record was read.
func (s *traceStream) next() (sim.TraceRecord, bool) {
	for s.pos >= len(s.cur) {
		if s.cur != nil {
			s.free <- s.cur[:0] // never blocks: free holds every batch at most
			s.cur = nil
		}
		b, ok := <-s.full
		if !ok {
			return sim.TraceRecord{}, false
		}
		s.cur, s.pos = b, 0
	}
	e := s.cur[s.pos]
	s.pos++
	return e, true
}

// stop tells the sender that nothing more will be read (receiver side).
func (s *traceStream) stop() { close(s.done) }
