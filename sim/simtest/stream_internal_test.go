package simtest

import (
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

// TestTraceStream: records cross batch boundaries in order and all arrive
// (three full batches and a partial one); a receiver that stops after the
// first record leaves the sender free to go on to its end (it drops what
// it sends).
func TestTraceStream(t *testing.T) {
	const n = 3*traceBatch + 17
	s := newTraceStream()
	go func() {
		for i := range n {
			s.send(sim.TraceRecord{Job: int64(i)})
		}
		s.end()
	}()
	for i := range n {
		e, ok := s.next()
		if !ok || e.Job != int64(i) {
			t.Fatalf("record %d: %+v %v", i, e, ok)
		}
	}
	if e, ok := s.next(); ok {
		t.Fatalf("after %d records: %+v", n, e)
	}

	s = newTraceStream()
	sent := make(chan struct{})
	go func() {
		for i := range 100 * traceBatch {
			s.send(sim.TraceRecord{Job: int64(i)})
		}
		s.end()
		close(sent)
	}()
	if e, ok := s.next(); !ok || e.Job != 0 {
		t.Fatalf("first record: %+v %v", e, ok)
	}
	s.stop()
	<-sent // would hang if the sender blocked once the receiver stopped
}
