package serverfilling

import (
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// TestLastMWideTies: lastMWide, which compares keys only and hands over
// to lastMWideTies at the first tie, returns what lastMWideTies returns
// and refreshes the same running jobs' keys, on random bucket states
// whose keys are drawn from a few values so that ties across buckets (M's
// last two, the least job outside M) are common: needs 8, 4, 2, 1 of
// k = 8, keys and fins multiples of 1/2 at now = 0 (exact products),
// running jobs' kept keys at or above their keys now, arrival indices in
// random order. It fails if any of the three kinds of tie (with M's last,
// with the second last, with the least outside M) is not handed over.
func TestLastMWideTies(t *testing.T) {
	r := rng.New(37, 1)
	needs := []int32{8, 4, 2, 1}
	p := &Policy{ord: SRPTOrder, crossings: true, k: 8, invK: 1.0 / 8, bneed: needs}
	for _, n := range needs {
		p.cls = append(p.cls, classInfo{need: n, scale: float64(n) / 8})
	}
	handed := 0
	for round := 0; round < 20000; round++ {
		p.slots = p.slots[:0]
		p.sb = make([]sbucket, len(needs))
		p.occ = p.occ[:0]
		p.carry.x = -1                     // a new state, no repair since the last round's: no carry (carriedWide)
		ids := make([]int64, 6*len(needs)) // arrival indices in random order
		for i := range ids {
			j := r.IntN(i + 1)
			ids[i], ids[j] = ids[j], int64(i)
		}
		for b := range needs {
			nRun, nWait := r.IntN(3), r.IntN(4)
			if nRun+nWait == 0 {
				continue
			}
			p.occ = append(p.occ, int32(b))
			fillWideBucket(p, r, b, ids, nRun, nWait)
		}
		kept := slices.Clone(p.slots)
		l, s, f := p.lastMWide(0)
		got := slices.Clone(p.slots)
		copy(p.slots, kept)
		wl, ws, wf := p.lastMWideTies(0)
		if l != wl || s != ws || f != wf {
			t.Fatalf("round %d: lastMWide %d %d %d, lastMWideTies %d %d %d", round, l, s, f, wl, ws, wf)
		}
		for i := range got {
			if got[i].key != p.slots[i].key {
				t.Fatalf("round %d: job %d's key %v after lastMWide, %v after lastMWideTies", round, i, got[i].key, p.slots[i].key)
			}
		}
		if l >= 0 && s >= 0 && (p.slots[l].key == p.slots[s].key) {
			handed++
		}
	}
	if handed < 1000 {
		t.Fatalf("only %d of the rounds had M's last two tied", handed)
	}
}

// fillWideBucket gives bucket b of a wide-path test state nRun running and
// nWait waiting jobs with keys now on a grid of 1/2 (ties common; fins
// multiples of 1/2 over the class's scale, exact products), running jobs'
// stored keys at or above their keys now (kept from an earlier refresh),
// arrival indices taken from ids in order, each group sorted as the
// policy keeps it, and a random w.
func fillWideBucket(p *Policy, r *rng.Stream, b int, ids []int64, nRun, nWait int) {
	sb := &p.sb[b]
	scale := p.cls[b].scale
	for i := 0; i < nRun+nWait; i++ {
		v := float64(1+r.IntN(4)) / 2 // the key now
		sl := slot{id: ids[len(p.slots)], class: int32(b), bucket: int32(b), need: p.bneed[b]}
		if i < nRun {
			sl.fin = v / scale
			sl.key = v + float64(r.IntN(2))/2 // kept at an earlier refresh
			sl.moving, sl.serve, sl.rate = true, true, scale
		} else {
			sl.key = v
		}
		sb.seq = append(sb.seq, int32(len(p.slots)))
		p.slots = append(p.slots, sl)
	}
	run, wait := sb.seq[:nRun], sb.seq[nRun:]
	slices.SortFunc(run, func(a, b int32) int {
		if finBefore(&p.slots[a], &p.slots[b]) {
			return -1
		}
		return 1
	})
	slices.SortFunc(wait, func(a, b int32) int {
		if keyBefore(&p.slots[a], &p.slots[b]) {
			return -1
		}
		return 1
	})
	sb.nRun, sb.w = int32(nRun), int32(r.IntN(nWait+1))
}
