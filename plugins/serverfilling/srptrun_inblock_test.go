package serverfilling

import (
	"math"
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// TestInBlock checks inBlock's two counting passes against a linear scan
// on blocks of every span (lo, hi) in the array, with fins drawn from a few
// values (ties, broken by arrival index) and the places outside the span
// holding the runSets' sentinels (−Inf before lo, +Inf from hi on; a job
// id each, which must not be read), for pairs below, among and above the
// block's jobs, its own jobs' pairs included (runDelete's lookup).
func TestInBlock(t *testing.T) {
	p := &Policy{}
	r := rng.New(44, 0)
	var b runBlock
	checked := 0
	for lo := 0; lo < runCap; lo++ {
		for hi := lo + 1; hi <= runCap; hi++ {
			for rep := range 3 {
				p.slots = p.slots[:0]
				for x := range runCap {
					b.e[x] = runEntry{fin: math.Inf(-1), x: int32(x)}
					if x >= hi {
						b.e[x].fin = math.Inf(1)
					}
					p.slots = append(p.slots, slot{id: int64(r.IntN(1 << 20))})
				}
				f := 0.0
				for x := lo; x < hi; x++ {
					f += float64(r.IntN(2 + rep))
					b.e[x].fin = f
				}
				for x := lo + 1; x < hi; x++ { // ascending (fin, id)
					if b.e[x].fin == b.e[x-1].fin && p.slots[x].id <= p.slots[x-1].id {
						p.slots[x].id = p.slots[x-1].id + 1 + int64(r.IntN(3))
					}
				}
				b.lo, b.hi = int32(lo), int32(hi)
				for q := range 12 {
					v, id := f*r.Float64()*1.2-0.5, int64(r.IntN(1<<20))
					switch {
					case q < 4: // a job's own pair
						x := lo + r.IntN(hi-lo)
						v, id = b.e[x].fin, p.slots[x].id
					case q < 8: // a fin of the block, another id
						v = b.e[lo+r.IntN(hi-lo)].fin
					}
					want := int32(hi)
					for x := lo; x < hi; x++ {
						if !p.entryBefore(b.e[x].fin, b.e[x].x, v, id) {
							want = int32(x)
							break
						}
					}
					if got := p.inBlock(&b, v, id); got != want {
						t.Fatalf("lo %d hi %d: inBlock(%v, %d) = %d, want %d", lo, hi, v, id, got, want)
					}
					checked++
				}
			}
		}
	}
	t.Logf("%d lookups", checked)
}
