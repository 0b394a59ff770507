package serverfilling

import (
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// TestRunBack checks a bucket's running jobs held as a treap and a back
// (srptback.go) against a sorted slice, through runAppend, runRemove and
// runLast as the SRPT path calls them: starts after the last job, inside
// the back, into a full back and ahead of it; the last job's removal (a
// preemption), the first's (a completion) and any other's; the back
// emptied into the treap (backFlush) and the kept last job forgotten (as a
// run moved at once does). After every step the treap's jobs in order
// followed by the back's are the slice, the back is ascending, the kept
// last job is the back's last (and known) or, with an empty back, the
// treap's, and runLast is the slice's last.
func TestRunBack(t *testing.T) {
	p := &Policy{seed: 1, fastSRPT: true, ord: SRPTOrder, cls: []classInfo{{scale: 1}}}
	p.sb = []sbucket{{root: -1, groups: []int32{0}}}
	p.rroot = []int32{-1}
	sb := &p.sb[0]
	r := rng.New(12, 0)
	var ref []int32 // the running jobs in (fin, id) order
	byFin := func(a, b int32) int {
		if p.tLess(a, b, modeFall) {
			return -1
		}
		return 1
	}
	spills, inside, ahead := 0, 0, 0
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
			nb := len(sb.seq)
			switch ntree := len(ref) - nb; {
			case nb == backCap && at > ntree:
				spills++
			case nb > 0 && at > ntree && at < len(ref):
				inside++
			case nb > 0 && at < ntree:
				ahead++
			}
			p.runAppend(i)
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
			p.runRemove(ref[k])
			ref = slices.Delete(ref, k, k+1)
		case r.IntN(2) == 0: // a run moves at once
			p.backFlush(sb)
		default: // and the kept last is forgotten, as after a run moved (applySeams)
			p.backFlush(sb)
			sb.lastOK = false
		}
		if int(sb.nRun) != len(ref) {
			t.Fatalf("step %d: %d running, want %d", step, sb.nRun, len(ref))
		}
		got := append(p.tCollect(p.rroot[0], nil), sb.seq...)
		if !slices.Equal(got, ref) {
			t.Fatalf("step %d: running jobs %v, want %v", step, got, ref)
		}
		for k := 1; k < len(sb.seq); k++ {
			if !p.tLess(sb.seq[k-1], sb.seq[k], modeFall) {
				t.Fatalf("step %d: back not ascending at %d", step, k)
			}
		}
		wantLast := int32(-1) // the back's last, else the treap's
		if n := len(sb.seq); n > 0 {
			wantLast = sb.seq[n-1]
			if !sb.lastOK {
				t.Fatalf("step %d: the back's last is not kept", step)
			}
		} else if p.rroot[0] >= 0 {
			wantLast = p.tLast(p.rroot[0])
		}
		if sb.lastOK && sb.last != wantLast {
			t.Fatalf("step %d: kept last %d, want %d", step, sb.last, wantLast)
		}
		if len(ref) > 0 {
			if x := p.runLast(sb, 0); x != ref[len(ref)-1] {
				t.Fatalf("step %d: runLast %d, want %d", step, x, ref[len(ref)-1])
			}
		}
	}
	if spills < 100 || inside < 1000 || ahead < 1000 {
		t.Fatalf("cases not reached: %d starts into a full back, %d inside it, %d ahead of it", spills, inside, ahead)
	}
}
