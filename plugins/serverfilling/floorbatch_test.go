package serverfilling

import (
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

// TestMovesReplayBatched: the batched replay reproduces the recorded run
// (same response times to the bit, same preemptions), as TestMovesReplay
// checks for the one-call-each replay.
func TestMovesReplayBatched(t *testing.T) {
	checkReplays(t, floorCases[:2], func(ms []move) (sim.Policy, *movesReplay) {
		rp := &movesReplay{ms: ms, batched: true}
		return rp, rp
	})
}

// BenchmarkMoveFloorBatched is BenchmarkMoveFloor's floor with the moves
// made as engineCallsRuns makes them, a run of one kind per engine call
// (floor/…), beside the one-call-each replay (floor1/…), on issue #35's
// two settings, for the SRPT and Gittins members.
func BenchmarkMoveFloorBatched(b *testing.B) {
	for _, c := range floorCases[:2] {
		w, arrivals := c.w(b), c.arrivals
		for _, sp := range Policies {
			if sp.New().(*Policy).proc == DivisorFilling && !dividesAll(w) || sp.Name == "serverfilling" || sp.Name == "divisorfilling" {
				continue
			}
			cfg := sim.Config{Seed: 1, Warmup: arrivals / 10, Arrivals: arrivals}
			_, ms := recordMoves(b, w, sp.New(), cfg)
			b.Run(c.name+"/floor1/"+sp.Name, func(b *testing.B) {
				rp := &movesReplay{ms: ms}
				benchCPU(b, func() (*sim.Result, error) { return sim.Run(w, rp, cfg) })
				if rp.err != nil {
					b.Fatal(rp.err)
				}
			})
			b.Run(c.name+"/floor/"+sp.Name, func(b *testing.B) {
				rp := &movesReplay{ms: ms, batched: true}
				benchCPU(b, func() (*sim.Result, error) { return sim.Run(w, rp, cfg) })
				if rp.err != nil {
					b.Fatal(rp.err)
				}
			})
		}
	}
}
