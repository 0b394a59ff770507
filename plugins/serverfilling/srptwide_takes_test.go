package serverfilling

import (
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// TestTakesFromCut: takesFromCut, which finds PackStop's cut from the end
// of the occupied buckets and lists the buckets before it only when their
// servers say one has a waiting job of M, gives the list, cut and servers
// left of takesWide's pass from the start (takesStop, its PackStop rule
// written out), on random bucket states whose M exceeds k: k = 2048 and
// needs that do not all divide it (as on Borg cell B), 3 to 12 occupied
// buckets, each with 0 to 5 running jobs and 0 to 5 waiting jobs of M
// (some buckets hold jobs outside M only: c = 0), drawn so that the cut
// lands anywhere, including the first and the last occupied bucket, and
// the buckets before it have waiting jobs of M in about half the states.
// It fails if any kind of state (a listed bucket before the cut, a cut
// with no move, running jobs after the cut) is not met.
func TestTakesFromCut(t *testing.T) {
	r := rng.New(47, 1)
	needs := []int32{2000, 1500, 1024, 700, 512, 300, 256, 100, 64, 17, 8, 1}
	p := &Policy{k: 2048, packing: PackStop, bneed: needs, nBuckets: len(needs)}
	p.sb = make([]sbucket, len(needs))
	var prefixListed, cutQuiet, afterListed, atFirst, atLast int
	for round := 0; round < 50000; round++ {
		p.occ = p.occ[:0]
		sum, run := 0, 0
		for b := range needs {
			p.sb[b] = sbucket{}
			if r.IntN(3) == 0 {
				continue // empty: not occupied
			}
			sb := &p.sb[b]
			// Mostly the state a decision leaves (the buckets before the
			// cut run their jobs of M), sometimes any.
			sb.nRun = int32(r.IntN(6))
			if r.IntN(2) == 0 {
				sb.w = int32(r.IntN(6))
			}
			// The waiting jobs outside M and the running ones after a
			// cut do not count in the takes beyond nRun and w; seq only
			// needs to hold them.
			sb.seq = make([]int32, sb.nRun+sb.w+int32(r.IntN(3)))
			if len(sb.seq) == 0 {
				continue
			}
			p.occ = append(p.occ, int32(b))
			sum += int(sb.nRun+sb.w) * int(needs[b])
			run += int(sb.nRun) * int(needs[b])
		}
		if len(p.occ) <= carryBuckets || sum <= p.k {
			continue
		}
		p.sumM = sum
		buf := make([]int32, 2*len(p.occ))
		want, wantCut, wantRem := takesStop(p)
		p.cut, p.rem = -1, -1
		got := p.takesFromCut(int32(run), buf)
		if !slices.Equal(got, want) || p.cut != wantCut || p.rem != wantRem {
			t.Fatalf("round %d: takesFromCut %v cut %d rem %d, takesStop %v cut %d rem %d", round, got, p.cut, p.rem, want, wantCut, wantRem)
		}
		pos, cutListed := slices.Index(p.occ, wantCut), false
		for i := 0; i+1 < len(want); i += 2 {
			switch at := slices.Index(p.occ, want[i]); {
			case at < pos:
				prefixListed++
			case at > pos:
				afterListed++
			default:
				cutListed = true
			}
		}
		if !cutListed {
			cutQuiet++
		}
		if pos == 0 {
			atFirst++
		}
		if pos == len(p.occ)-1 {
			atLast++
		}
	}
	if prefixListed == 0 || cutQuiet == 0 || afterListed == 0 || atFirst == 0 || atLast == 0 {
		t.Fatalf("states not met: listed before the cut %d, cut without a move %d, listed after it %d, cut first %d, last %d",
			prefixListed, cutQuiet, afterListed, atFirst, atLast)
	}
}

// takesStop is takesWide's pass from the start under PackStop, as a
// reference: each occupied bucket in order takes its jobs of M while they
// fit (listed if it has waiting ones), the first that does not takes what
// fits (listed if that moves a job or leaves running and waiting jobs of
// M beside each other), and the later ones take 0 (listed if they run
// jobs). It returns the list, the cut and the servers left.
func takesStop(p *Policy) ([]int32, int32, int) {
	var mv []int32
	rem, cut, stopped := p.k, int32(p.nBuckets), false
	for _, b := range p.occ {
		sb, need := &p.sb[b], int(p.bneed[b])
		n, c := sb.nRun, sb.nRun+sb.w
		switch {
		case stopped:
			if n != 0 {
				mv = append(mv, b, 0)
			}
		case int(c)*need <= rem:
			rem -= int(c) * need
			if sb.w != 0 {
				mv = append(mv, b, c)
			}
		default:
			t := int32(rem / need)
			rem -= int(t) * need
			cut, stopped = b, true
			if n != t || t != 0 && t != c {
				mv = append(mv, b, t)
			}
		}
	}
	return mv, cut, rem
}
