package serverfilling

// DivisorFilling in O(C · log k) per recursion level: done for arrival
// order (policy divisorfilling, divisorfast.go); the SRPT and Gittins
// orderings (divisorfilling-srpt, divisorfilling-gittins) still run on the
// general path: M (the first k jobs in the ordering) is rebuilt by a merge
// and the recursion below walks it, O(|M| · log k) per event (depth ≤
// log2 k). The recursion below stays the definition both paths implement.
//
// What holds. Every set the recursion selects from is a union of need
// buckets of M (Case 2: even or odd needs; Case 3: needs divisible by p or
// not), and every selection takes "the first kk" of such a union in the
// ordering, so within each bucket the chosen jobs are always a prefix of
// the bucket's jobs in M that the recursion has not yet taken. A level of
// the recursion is therefore a function of per-bucket counts and of the
// positions, in the ordering, of the jobs at per-bucket offsets, and a
// decision's result is, per bucket, how many of its first jobs are served,
// as in ServerFilling's takes.
//
// Arrival order (divisorfast.go). M only changes at its end and by
// completions, so it is kept per bucket as on the plain path; a Fenwick
// tree over M's positions with one counter per bucket answers "the first
// kk jobs of a list past per-bucket offsets" by one descent that carries
// every bucket's prefix count (O(C · log k)), and backfill is at most C
// descents weighted by need.
//
// What the SRPT and monotone Gittins orders would take: per bucket, the
// jobs of M in the ordering with order statistics, srptfast.go's running
// and waiting treaps (M ∩ bucket the running jobs plus a prefix of the
// waiting ones). Then:
//  1. M = the first k jobs: a selection of the k-th smallest over the C
//     bucket sequences, O(C log² n) (drop half of one sequence's
//     candidates per round).
//  2. Each "first kk jobs of a union U of buckets, past per-bucket offsets"
//     is the same selection restricted to U: O(C log² n); Case 1 needs only
//     the need-1 bucket's count; Case 3 runs at most p extractions per
//     level, each one selection. Over the ≤ log2 k levels and ≤ p
//     extractions: O(C · log k · p_max · log² n) per decision, no pass
//     over M. (Arrival order has one sequence of positions for all
//     buckets, which is what makes its selection a single descent; the
//     running jobs' order across needs changes between events under SRPT,
//     so there the selection is over the buckets' own sequences.)
//  3. Backfill (first fit from M in order): as for arrival order, per
//     round the jobs of the buckets that fit in order while the largest
//     still fits, then one more; with per-bucket sequences a merge of C
//     treaps rather than one descent.
//  4. Crossing timers (DivisorFilling-SRPT, after a Case 3 extraction):
//     today the earliest crossing of adjacent jobs of M, a pass over M;
//     only crossings at a selection's boundary can change the choice, so
//     the candidates would be, per extraction and per bucket, its last
//     selected and first unselected job (O(C²) pairs per extraction).
//
// Apply as in srptfast.go: per bucket, preempt running jobs past the new
// served prefix and start waiting jobs inside it, O(log n) each. The
// factor p_max (the largest prime factor of k) is 1 for k a power of two.

// divFill marks the jobs DivisorFilling serves (S App. C.1) among list
// (in ordering order) on kk servers, where a job of need n counts as need
// n/scale (scale servers combined into one).
//
// S App. C.1, on the subproblem (list, kk):
//
//	M = the first kk jobs of list (all if fewer).
//	Case 1, M has at least kk/6 jobs of need 1: serve M in descending need
//	  (ties by the ordering) while the next one fits (stop at the first that
//	  does not, i* of App. C.2), then M's other need-1 jobs in order while
//	  servers remain.
//	Case 2, kk = 2^a·3^b: M2 = even needs, M3 = odd needs > 1; recurse on M2
//	  with kk/2 and needs halved if 2|M2| ≥ 3|M3| (tie: M2), else on M3 with
//	  kk/3 and needs divided by 3.
//	Case 3, largest prime factor p ≥ 5 of kk: Mp = needs divisible by p; if
//	  p|Mp| ≥ kk recurse on Mp with kk/p and needs divided by p. Otherwise
//	  Mr = needs not divisible by p and > 1 (they divide kk/p); p times, or
//	  until Mr is empty: run the procedure on (Mr, kk/p), needs unchanged —
//	  its own M is Mr's first kk/p jobs — and remove what it serves from Mr.
//
// Choices where App. C.1 is silent: an empty set recursed on serves nothing
// (only when M has fewer than kk/6 need-1 jobs and no other: the Case 2
// tie, or Case 3 with nothing to extract); the jobs a Case 3 subproblem
// does not serve stay in Mr for the next extraction (only served jobs are
// "extracted").
func (p *Policy) divFill(list []int32, kk, scale, depth int) {
	if len(list) > kk {
		list = list[:kk]
	}
	if len(list) == 0 || kk < 1 {
		return
	}
	ones := 0
	for _, i := range list {
		if int(p.slots[i].need) == scale {
			ones++
		}
	}
	if 6*ones >= kk {
		p.dfCase1(list, kk, scale)
		return
	}
	buf := p.depthBuf(&p.dfBuf, depth, len(list))
	lp := int(p.lpf[kk])
	if lp <= 3 { // Case 2 (kk = 1 is always Case 1 when M is non-empty)
		n2, n3 := 0, 0
		for _, i := range list {
			n := int(p.slots[i].need) / scale
			if n%2 == 0 {
				n2++
			} else if n > 1 {
				n3++
			}
		}
		if 2*n2 >= 3*n3 {
			for _, i := range list {
				if (int(p.slots[i].need)/scale)%2 == 0 {
					buf = append(buf, i)
				}
			}
			p.dfBuf[depth] = buf
			if len(buf) > 0 {
				p.divFill(buf, kk/2, scale*2, depth+1)
			}
			return
		}
		for _, i := range list {
			if n := int(p.slots[i].need) / scale; n%2 == 1 && n > 1 {
				buf = append(buf, i)
			}
		}
		p.dfBuf[depth] = buf
		p.divFill(buf, kk/3, scale*3, depth+1)
		return
	}
	// Case 3.
	np := 0
	for _, i := range list {
		if (int(p.slots[i].need)/scale)%lp == 0 {
			np++
		}
	}
	if lp*np >= kk {
		for _, i := range list {
			if (int(p.slots[i].need)/scale)%lp == 0 {
				buf = append(buf, i)
			}
		}
		p.dfBuf[depth] = buf
		p.divFill(buf, kk/lp, scale*lp, depth+1)
		return
	}
	for _, i := range list {
		if n := int(p.slots[i].need) / scale; n%lp != 0 && n > 1 {
			buf = append(buf, i)
		}
	}
	p.dfBuf[depth] = buf
	p.dfExtracted = p.dfExtracted || len(buf) > 0
	sub := kk / lp
	for rep := 0; rep < lp && len(buf) > 0; rep++ {
		sb := p.depthBuf(&p.dfSub, depth, sub)
		sb = append(sb, buf[:min(len(buf), sub)]...)
		p.dfSub[depth] = sb
		p.divFill(sb, sub, scale, depth+1)
		w := 0
		for _, i := range buf {
			if !p.slots[i].serve {
				buf[w] = i
				w++
			}
		}
		buf = buf[:w]
	}
}

// dfCase1 is App. C.1.1 on (list, kk, scale); list has at most kk jobs.
func (p *Policy) dfCase1(list []int32, kk, scale int) {
	order := p.byNeedDesc(list)
	rem := kk
	for _, i := range order {
		n := int(p.slots[i].need) / scale
		if n > rem {
			break
		}
		p.slots[i].serve = true
		rem -= n
	}
	for _, i := range list {
		if rem == 0 {
			return
		}
		if sl := &p.slots[i]; !sl.serve && int(sl.need) == scale {
			sl.serve = true
			rem--
		}
	}
}

// depthBuf returns the empty scratch slice of the given depth, with room for
// n entries (allocation-free once the buffers have grown).
func (p *Policy) depthBuf(bufs *[][]int32, depth, n int) []int32 {
	for len(*bufs) <= depth {
		*bufs = append(*bufs, nil)
	}
	b := (*bufs)[depth]
	if cap(b) < n {
		b = make([]int32, 0, max(n, 2*cap(b)))
	}
	return b[:0]
}
