package serverfilling

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTreapNodeKeys: the treaps compare the pairs their nodes hold (tKey),
// not the slots, so the pairs must order the jobs as tLess does in every
// mode and follow a job into the treap it joins. Jobs with keys and fins
// from a few values (ties broken by arrival; fins include −0 and +0, equal
// as floats) are inserted into one treap per mode, runs are moved from a
// treap of one order into one of another (preemptRun's and startRun's
// joins, whole and in part), and jobs are deleted from the middle and the
// ends; after each step every treap must list its jobs in tLess's order,
// every node must hold its job's pair, and every subtree size must be
// right.
func TestTreapNodeKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 1))
	vals := []float64{math.Copysign(0, -1), 0, 1, 2, 2.5, 7}
	for c := range 300 {
		n := 20 + rng.IntN(60)
		p := &Policy{slots: make([]slot, n), ds: &dsrpt{}, seed: 0x9e3779b9}
		for i := range p.slots {
			p.slots[i] = slot{id: int64(rng.IntN(50)*100 + i), key: vals[rng.IntN(len(vals))], fin: vals[rng.IntN(len(vals))]}
		}
		modes := []uint8{modeKey, modeFall, modeRise}
		roots := []int32{-1, -1, -1}
		in := make([][]int32, 3) // the jobs of each treap
		for i := range n {
			m := rng.IntN(3)
			roots[m], _ = p.tInsert(roots[m], int32(i), modes[m])
			in[m] = append(in[m], int32(i))
		}
		check := func(step string) {
			t.Helper()
			for m, mode := range modes {
				want := slices.Clone(in[m])
				slices.SortFunc(want, func(a, b int32) int {
					if p.tLess(a, b, mode) {
						return -1
					}
					return 1
				})
				if got := p.tCollect(roots[m], nil); !slices.Equal(got, want) {
					t.Fatalf("case %d, %s: mode %d lists %v, want %v", c, step, mode, got, want)
				}
				for _, x := range in[m] {
					if v, id := p.tKey(x, mode); p.tn[x].v != v || p.tn[x].id != id {
						t.Fatalf("case %d, %s: job %d's node holds (%v, %d), want (%v, %d)", c, step, x, p.tn[x].v, p.tn[x].id, v, id)
					}
				}
				if !sizesOK(p, roots[m]) || p.tSize(roots[m]) != int32(len(in[m])) {
					t.Fatalf("case %d, %s: mode %d: subtree sizes wrong", c, step, mode)
				}
			}
		}
		check("inserted")
		for step := range 6 {
			// Move the last r jobs of one treap to the front of another
			// (joinFront) or its first r to the back (joinBack).
			from, to := rng.IntN(3), rng.IntN(3)
			if from == to || len(in[from]) == 0 {
				continue
			}
			r := 1 + rng.IntN(len(in[from]))
			var run, rest []int32
			var piece int32
			if step%2 == 0 {
				roots[from], piece = p.tSplitRank(roots[from], int32(len(in[from])-r))
				run = p.tCollect(piece, nil)
				rest = p.tCollect(roots[from], nil)
				roots[to] = p.joinFront(roots[to], piece, run, modes[to], runSorted(p, run, modes[to]))
			} else {
				piece, roots[from] = p.tSplitRank(roots[from], int32(r))
				run = p.tCollect(piece, nil)
				rest = p.tCollect(roots[from], nil)
				roots[to] = p.joinBack(roots[to], piece, run, modes[to], runSorted(p, run, modes[to]))
			}
			in[from], in[to] = rest, append(in[to], run...)
			check("joined")
			// Then take a job out of the middle, the first and the last of
			// the destination, and put them back in by insertion.
			if len(in[to]) < 3 {
				continue
			}
			x := in[to][rng.IntN(len(in[to]))]
			roots[to] = p.tDelete(roots[to], x, modes[to])
			f := p.tFirst(roots[to])
			roots[to] = p.tDeleteMin(roots[to])
			l := p.tLast(roots[to])
			roots[to], _ = p.tDeleteLast(roots[to])
			for _, y := range []int32{x, f, l} {
				roots[to], _ = p.tInsert(roots[to], y, modes[to])
			}
			check("deleted and reinserted")
		}
	}
}

// TestTreapAppend: a job that follows every job of a treap, added by
// tAppend (runAppend's path when the kept last precedes it), must leave the
// very treap tInsert makes from the same priorities: the same links and
// subtree sizes at every node. Jobs are added in random order to two
// policies with the same seed, through tAppend on one whenever the job
// follows the treap's last and through tInsert always on the other, and
// removed from both at random (tDelete, tDeleteLast).
func TestTreapAppend(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 2))
	for c := range 200 {
		n := 10 + rng.IntN(200)
		slots := make([]slot, n)
		for i := range slots {
			slots[i] = slot{id: int64(rng.IntN(20)*1000 + i), fin: float64(rng.IntN(8))}
		}
		a := &Policy{slots: slots, seed: 0x9e3779b9}
		b := &Policy{slots: slots, seed: 0x9e3779b9}
		ra, rb := int32(-1), int32(-1)
		in := []int32{}
		appended := 0
		for _, i := range rng.Perm(n) {
			x := int32(i)
			if ra >= 0 && rng.IntN(4) == 0 { // remove one first
				y := in[rng.IntN(len(in))]
				if l := a.tLast(ra); rng.IntN(2) == 0 {
					y = l
					ra, _ = a.tDeleteLast(ra)
				} else {
					ra = a.tDelete(ra, y, modeFall)
				}
				rb = b.tDelete(rb, y, modeFall)
				in = slices.DeleteFunc(in, func(z int32) bool { return z == y })
			}
			if ra >= 0 && a.tLess(a.tLast(ra), x, modeFall) {
				ra = a.tAppend(ra, x, modeFall)
				appended++
			} else {
				ra = a.tAdd(ra, x, modeFall)
			}
			rb, _ = b.tInsert(rb, x, modeFall)
			in = append(in, x)
			if ra != rb {
				t.Fatalf("case %d: roots %d and %d", c, ra, rb)
			}
			for _, z := range in {
				if a.tn[z] != b.tn[z] {
					t.Fatalf("case %d: node %d is %+v after tAppend, %+v after tInsert", c, z, a.tn[z], b.tn[z])
				}
			}
		}
		if appended == 0 && n > 50 {
			t.Fatalf("case %d: tAppend never taken", c)
		}
	}
}
