package serverfilling

import (
	"math"
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// TestRunBack checks a bucket's running jobs held as blocks (srptrun.go)
// against a sorted slice, through runAppend, runRemove and runLast as the
// SRPT path calls them, and runCutTail as preemptRunBlocks does: starts
// after the last job and anywhere inside (with ties on fin broken by
// arrival), into full blocks (splits), after a full last block (a new
// block) and at either side of a block; the
// last job's removal (a preemption), the first's (a completion) and any
// other's (a block's first among them); a tail cut at a random rank. After every step the blocks' jobs
// in order are the slice, every block is non-empty, at most runCap long and
// ascending, first[] holds each block's first fin, the count is the
// slice's, the kept last job is the slice's last (and known), runLast
// is the slice's last, and the places outside each block's span hold the
// sentinels (−Inf before it, +Inf after it).
func TestRunBack(t *testing.T) {
	p := &Policy{seed: 1, fastSRPT: true, ord: SRPTOrder, cls: []classInfo{{scale: 1}}}
	p.sb = []sbucket{{root: -1, groups: []int32{0}, last: -1, lastOK: true}}
	p.rroot = []int32{-1}
	p.runs = make([]runSet, 1)
	sb, rs := &p.sb[0], &p.runs[0]
	r := rng.New(12, 0)
	var ref []int32 // the running jobs in (fin, id) order
	byFin := func(a, b int32) int {
		if p.tLess(a, b, modeFall) {
			return -1
		}
		return 1
	}
	splits, appended, inside, middle, cuts, blockFirsts := 0, 0, 0, 0, 0, 0
	for step := range 60000 {
		grow := 8 // out of 20: the starts' share, higher in phases
		if step/3000%2 == 1 {
			grow = 12
		}
		switch op := r.IntN(20); {
		case op < grow || len(ref) == 0:
			fin := float64(r.IntN(1000))
			if r.IntN(2) == 0 && len(ref) > 0 { // after the last, as half the starts
				fin = p.slots[ref[len(ref)-1]].fin + float64(r.IntN(3))
			}
			id := int64(r.IntN(1<<20))<<24 | int64(len(p.slots))
			p.slots = append(p.slots, slot{id: id, fin: fin})
			i := int32(len(p.slots) - 1)
			at, _ := slices.BinarySearchFunc(ref, i, byFin)
			if at > 0 && at < len(ref) {
				inside++
			}
			nb := len(rs.blk)
			p.runAppend(i)
			if len(rs.blk) > nb {
				if b := rs.blk[len(rs.blk)-1]; b.hi-b.lo == 1 && b.e[b.lo].x == i {
					appended++ // after a full last block: a new one
				} else {
					splits++
				}
			}
			ref = slices.Insert(ref, at, i)
		case op < grow+4: // a preemption
			x := p.runLast(sb, 0)
			p.runRemove(x)
			ref = ref[:len(ref)-1]
		case op < grow+7: // a completion
			p.runRemove(ref[0])
			ref = ref[1:]
		case op < 19 || r.IntN(40) > 0:
			k := r.IntN(len(ref))
			if k > 0 && k < len(ref)-1 {
				middle++
				for bi, b := range rs.blk {
					if bi > 0 && b.e[b.lo].x == ref[k] {
						blockFirsts++
					}
				}
			}
			p.runRemove(ref[k])
			ref = slices.Delete(ref, k, k+1)
		default: // a run preempted at once
			keep := int32(r.IntN(len(ref) + 1))
			got := p.runCutTail(rs, keep, nil)
			if !slices.Equal(got, ref[keep:]) {
				t.Fatalf("step %d: cut %v, want %v", step, got, ref[keep:])
			}
			sb.nRun = keep
			sb.last = rs.last()
			ref = ref[:keep]
			cuts++
		}
		checkRunSet(t, p, step, ref)
	}
	if splits < 100 || appended < 20 || inside < 10000 || middle < 1000 || blockFirsts < 20 || cuts < 20 {
		t.Fatalf("cases not reached: %d splits, %d new last blocks, %d starts inside, %d removals inside (%d of a block's first), %d cuts",
			splits, appended, inside, middle, blockFirsts, cuts)
	}
	t.Logf("%d splits, %d new last blocks, %d starts inside, %d removals inside, %d cuts", splits, appended, inside, middle, cuts)
}

// checkRunSet checks bucket 0's runSet against ref (see TestRunBack).
func checkRunSet(t *testing.T, p *Policy, step int, ref []int32) {
	t.Helper()
	sb, rs := &p.sb[0], &p.runs[0]
	if int(sb.nRun) != len(ref) || int(rs.n) != len(ref) {
		t.Fatalf("step %d: %d running (set %d), want %d", step, sb.nRun, rs.n, len(ref))
	}
	if got := rs.runJobs(nil); !slices.Equal(got, ref) {
		t.Fatalf("step %d: running jobs %v, want %v", step, got, ref)
	}
	if len(rs.first) != len(rs.blk) {
		t.Fatalf("step %d: %d first fins for %d blocks", step, len(rs.first), len(rs.blk))
	}
	for bi, b := range rs.blk {
		if b.hi <= b.lo || b.lo < 0 || b.hi > runCap {
			t.Fatalf("step %d: block %d spans [%d, %d)", step, bi, b.lo, b.hi)
		}
		if rs.first[bi] != b.e[b.lo].fin {
			t.Fatalf("step %d: block %d's first fin %v, want %v", step, bi, rs.first[bi], b.e[b.lo].fin)
		}
		for k := b.lo; k < b.hi; k++ {
			if e := b.e[k]; e.fin != p.slots[e.x].fin {
				t.Fatalf("step %d: block %d holds fin %v for job %d (fin %v)", step, bi, e.fin, e.x, p.slots[e.x].fin)
			}
		}
		for k := range b.e { // the sentinels (inBlock)
			if f := b.e[k].fin; k < int(b.lo) && !math.IsInf(f, -1) || k >= int(b.hi) && !math.IsInf(f, 1) {
				t.Fatalf("step %d: block %d [%d, %d) holds fin %v at %d", step, bi, b.lo, b.hi, f, k)
			}
		}
	}
	wantLast := int32(-1)
	if len(ref) > 0 {
		wantLast = ref[len(ref)-1]
	}
	if !sb.lastOK || sb.last != wantLast {
		t.Fatalf("step %d: kept last %d (known %v), want %d", step, sb.last, sb.lastOK, wantLast)
	}
	if len(ref) > 0 {
		if x := p.runLast(sb, 0); x != wantLast {
			t.Fatalf("step %d: runLast %d, want %d", step, x, wantLast)
		}
	}
}

// TestTBuild checks that tBuild makes the treap tAppend makes job by job
// from the same priorities (children, sizes, priorities of every node), on
// random runs of up to 300 jobs; its jobs in order are the run.
func TestTBuild(t *testing.T) {
	r := rng.New(5, 0)
	for trial := range 2000 {
		m := r.IntN(300)
		if trial%50 == 0 {
			m = trial % 3
		}
		run := make([]int32, m)
		for k := range run {
			run[k] = int32(k*3 + r.IntN(3)) // increasing slots, not dense
		}
		for k := len(run) - 1; k > 0; k-- { // shuffled: tBuild goes by position
			o := r.IntN(k + 1)
			run[k], run[o] = run[o], run[k]
		}
		a := &Policy{seed: uint32(trial + 1)}
		a.slots = make([]slot, 3*m+3)
		b := &Policy{seed: uint32(trial + 1), slots: a.slots}
		ta := int32(-1)
		for _, x := range run {
			ta = a.tAppend(ta, x, modeKey)
		}
		tb := b.tBuild(run)
		if ta != tb {
			t.Fatalf("trial %d: root %d, want %d", trial, tb, ta)
		}
		for _, x := range run {
			na, nb := a.tn[x], b.tn[x]
			if na.l != nb.l || na.r != nb.r || na.sz != nb.sz || na.pri != nb.pri {
				t.Fatalf("trial %d: node %d is %+v, want %+v", trial, x, nb, na)
			}
		}
		if got := b.tCollect(tb, nil); !slices.Equal(got, run) && m > 0 {
			t.Fatalf("trial %d: jobs %v, want %v", trial, got, run)
		}
	}
}
