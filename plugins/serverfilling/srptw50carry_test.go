package serverfilling

import (
	"math"
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// w50Policy is a wide-path Policy at k = 8 with needs 8, 4, 2, 1 (one
// bucket each), for the random states of srptw50carry.go's tests.
func w50Policy() *Policy {
	needs := []int32{8, 4, 2, 1}
	p := &Policy{ord: SRPTOrder, crossings: true, wide: true, k: 8, invK: 1.0 / 8, bneed: needs}
	for _, n := range needs {
		p.cls = append(p.cls, classInfo{need: n, scale: float64(n) / 8})
	}
	p.live = make([]uint64, 1)
	return p
}

// w50State fills p with a random state of the wide path at now = 0, as
// TestLastMWideTies builds them (keys on a grid of 1/2, so that ties are
// common; running jobs' stored keys possibly above their keys now, as
// kept from an earlier refresh), with at least three occupied buckets
// (more than carryBuckets, where the carry is made), no record and no
// arrival named; it returns the next arrival index.
func w50State(r *rng.Stream, p *Policy) int64 {
	for {
		p.slots = p.slots[:0]
		p.sb = make([]sbucket, len(p.bneed))
		p.occ = p.occ[:0]
		p.carry = carry{x: -1}
		p.wNew, p.wPhi2 = 0, math.Inf(-1)
		ids := make([]int64, 6*len(p.bneed)) // arrival indices in random order
		for i := range ids {
			j := r.IntN(i + 1)
			ids[i], ids[j] = ids[j], int64(i)
		}
		p.sumM = 0
		for b := range p.bneed {
			nRun, nWait := r.IntN(4), r.IntN(4)
			if nRun+nWait == 0 {
				continue
			}
			p.occ = append(p.occ, int32(b))
			fillWideBucket(p, r, b, ids, nRun, nWait)
			sb := &p.sb[b]
			p.sumM += int((sb.nRun + sb.w) * p.bneed[b])
			p.live[0] |= 1 << b
		}
		if len(p.occ) > carryBuckets {
			return int64(len(ids))
		}
	}
}

// w50Outside is the least key outside M (+Inf: none) and the least job
// there in less (-1: none), found by looking at every job.
func w50Outside(p *Policy) (float64, int32) {
	k, first := math.Inf(1), int32(-1)
	for _, b := range p.occ {
		sb := &p.sb[b]
		for _, x := range sb.seq[sb.nRun+sb.w:] {
			k = min(k, p.slots[x].key)
			if first < 0 || p.less(x, first) {
				first = x
			}
		}
	}
	return k, first
}

// TestCarryAddWidePhi: after the repair adds the least outside job o found
// by firstOutWide, carryAddWide raises κ to o's key and makes φ the least
// key outside M, on random states with ties. Fails with the key of o's
// bucket's next outside job left out of φ, or with κ not raised.
func TestCarryAddWidePhi(t *testing.T) {
	r := rng.New(50, 1)
	p := w50Policy()
	lowered, added := 0, 0
	for round := 0; round < 20000; round++ {
		w50State(r, p)
		p.carry = carry{x: 0, id: p.slots[0].id, kap: float64(r.IntN(3)) / 2}
		o, _ := p.firstOutWide()
		if o < 0 {
			continue
		}
		kap := p.carry.kap
		p.carryAddWide(o, carriedPass)
		sb := &p.sb[p.slots[o].bucket]
		sb.w++ // the repair's addition (decideSRPT)
		p.sumM += int(p.slots[o].need)
		added++
		if want := max(kap, p.slots[o].key); p.carry.kap != want {
			t.Fatalf("round %d: κ %v after adding a job of key %v to κ %v", round, p.carry.kap, p.slots[o].key, kap)
		}
		want, _ := w50Outside(p)
		if p.carry.phi != want {
			t.Fatalf("round %d: φ %v, least key outside M %v", round, p.carry.phi, want)
		}
		if i := int(sb.nRun + sb.w); i < len(sb.seq) && p.slots[sb.seq[i]].key < p.wPhi2 {
			lowered++ // o's bucket's next job gave φ
		}
	}
	if lowered < 1000 || added < 10000 {
		t.Fatalf("only %d additions, %d with φ from o's bucket", added, lowered)
	}
}

// TestOutsideArrivalLeast: after arrivals (sInsertWaiting, with
// arriveSRPT's count of M) into a state whose φ is the least key outside M
// or below it, the arrival outsideArrival names (wNew) is the least job
// outside M in less and wPhi2 bounds every other key outside M; keys on a
// grid, so arrivals often tie the least one. Fails with an arrival of a
// key equal to φ named, or with wPhi2 not lowered by a later arrival.
func TestOutsideArrivalLeast(t *testing.T) {
	r := rng.New(50, 2)
	p := w50Policy()
	named, tied := 0, 0
	for round := 0; round < 20000; round++ {
		id := w50State(r, p)
		phi, _ := w50Outside(p)
		if r.IntN(4) == 0 {
			phi -= 0.5 // a bound below the least
		}
		p.carry.phi = phi
		for range 1 + r.IntN(4) {
			b := r.IntN(len(p.bneed))
			x := int32(len(p.slots))
			p.slots = append(p.slots, slot{id: id, class: int32(b), bucket: int32(b), need: p.bneed[b], key: float64(1+r.IntN(4)) / 2})
			id++
			sb := &p.sb[b]
			if len(sb.seq) == 0 {
				p.occ = append(p.occ, int32(b))
				slices.Sort(p.occ)
			}
			if k, _ := w50Outside(p); p.slots[x].key == k {
				tied++
			}
			if rank := p.sInsertWaiting(sb, x); rank < sb.w { // arriveSRPT
				sb.w++
			}
		}
		if p.wNew == 0 {
			continue
		}
		named++
		x := p.wNew - 1
		_, first := w50Outside(p)
		if x != first {
			t.Fatalf("round %d: arrival %d named the least outside M, the least is %d", round, x, first)
		}
		if p.carry.phi != p.slots[x].key {
			t.Fatalf("round %d: φ %v, the named arrival's key %v", round, p.carry.phi, p.slots[x].key)
		}
		for _, b := range p.occ {
			sb := &p.sb[b]
			for _, y := range sb.seq[sb.nRun+sb.w:] {
				if y != x && p.slots[y].key < p.wPhi2 {
					t.Fatalf("round %d: job %d outside M has key %v below wPhi2 %v", round, y, p.slots[y].key, p.wPhi2)
				}
			}
		}
	}
	if named < 5000 || tied < 1000 {
		t.Fatalf("only %d rounds named an arrival, %d arrivals tied the least key", named, tied)
	}
}

// TestEvictWideCarry: after a full pass of lastMWide records M's last job
// L (running) and the repair evicts it (evictWide), a record moved to L's
// bucket's next running job y gives the full pass's answer whenever the
// carried test (carriedStep) then holds, and φ still bounds every key
// outside M, on random states with ties.
// Fails with the record moved to another running job of the bucket, or
// with φ not lowered by the evicted key.
func TestEvictWideCarry(t *testing.T) {
	r := rng.New(50, 3)
	p := w50Policy()
	moved := 0
	for round := 0; round < 50000; round++ {
		w50State(r, p)
		last, _, _ := p.lastMWide(0)
		if last < 0 || !p.slots[last].moving || p.carry.x != last {
			continue
		}
		p.evictWide(last, 0, nil)
		if p.carry.x < 0 {
			continue
		}
		moved++
		if k, _ := w50Outside(p); p.carry.phi > k {
			t.Fatalf("round %d: φ %v above the key %v outside M", round, p.carry.phi, k)
		}
		c := p.carry
		if !p.carriedStep(0) {
			continue
		}
		if got, _, _ := p.lastMWideTies(0); got != c.x {
			t.Fatalf("round %d: carried %d after the eviction, the pass's last %d", round, c.x, got)
		}
	}
	if moved < 1000 {
		t.Fatalf("only %d evictions moved the record", moved)
	}
}

// TestFromWaitCarry: a record made by a full pass whose M's last job L
// waits (carryFromWide) answers the full pass's last job at the next
// step, after the seams start L's bucket's waiting jobs of M (L the last
// of them; keys now at most their frozen keys, so that a job started with
// L may end behind it in the running order) and sometimes preempt the
// bucket's last running jobs back into M, on random states with ties.
// Fails with fromWait's test of the bucket's waiting jobs of M or of its
// last running job dropped, with the record kept when that test fails, or
// with the record taken in the usual form at once (wFromWait never set).
func TestFromWaitCarry(t *testing.T) {
	r := rng.New(50, 4)
	p := w50Policy()
	made, kept := 0, 0
rounds:
	for round := 0; round < 50000; round++ {
		w50State(r, p)
		last, _, _ := p.lastMWide(0)
		if last < 0 || p.slots[last].moving || p.carry.x != last {
			continue
		}
		made++
		b := p.slots[last].bucket
		sb := &p.sb[b]
		scale := p.cls[b].scale
		for _, x := range sb.seq[sb.nRun : sb.nRun+sb.w] { // startSeam
			sl := &p.slots[x]
			v := max(sl.key-float64(r.IntN(2))/2, 0.5)
			sl.fin, sl.key = v/scale, v
			sl.moving, sl.serve, sl.rate = true, true, scale
		}
		sb.nRun += sb.w
		sb.w = 0
		slices.SortFunc(sb.seq[:sb.nRun], func(a, b int32) int {
			if finBefore(&p.slots[a], &p.slots[b]) {
				return -1
			}
			return 1
		})
		for n := r.IntN(3); n > 0 && sb.nRun > 0; n-- { // preemptSeam: the last running first
			x := sb.seq[sb.nRun-1]
			p.sToWaiting(sb, x, 0)
			if p.sWaitCount(sb, x) > sb.w {
				continue rounds // behind a job outside M: not a move the seams make
			}
			sb.w++
		}
		if sb.w == 0 && sb.nRun > 0 && sb.seq[sb.nRun-1] == last {
			kept++
		}
		saved := slices.Clone(p.slots)
		got, _, _ := p.lastMWide(0)
		copy(p.slots, saved)
		p.carry.x = -1
		want, _, _ := p.lastMWideTies(0)
		if got != want {
			t.Fatalf("round %d: lastMWide %d from a record made with M's last %d waiting, the pass's last %d", round, got, last, want)
		}
	}
	if made < 5000 || kept < 2000 {
		t.Fatalf("only %d records made with M's last job waiting, %d kept", made, kept)
	}
}
