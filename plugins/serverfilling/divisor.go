package serverfilling

// DivisorFilling without a pass over M: done for arrival order (policy
// divisorfilling, divisorfast.go) and for the SRPT order when k = 2^a·3^b
// (divisorfilling-srpt, divisorsrpt.go), and for the Gittins order under
// the same k when no rank rises with age (divisorfilling-gittins, same
// file; two classes of one need get a bucket each, classBuckets). Still on
// the general path (M, the first k jobs in the ordering, rebuilt by a
// merge and walked by the recursion below, O(|M| · log k) per event, depth
// ≤ log2 k): both when k has a prime factor ≥ 5, and
// divisorfilling-gittins with a rank that rises with age. The recursion below stays
// the definition every path implements.
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
// SRPT order, k = 2^a·3^b (divisorsrpt.go; Gittins ranks that never rise
// likewise, with a bucket per class where classes share a need). Per bucket, its jobs are kept
// in the ordering with order statistics: srptfast.go's running and waiting
// treaps, M ∩ bucket the running jobs plus a prefix of the waiting ones
// (an arrival since the last decision can sit among the running jobs: one
// job per decision, at a rank found by one walk). Then:
//  1. M = the first k jobs is repaired at its ends (O(C · log n) per job
//     entering or leaving it; an event moves at most one across).
//  2. "The first kk jobs of a union U of buckets past per-bucket offsets"
//     is a selection over the buckets' sequences: O(1) when U holds one
//     bucket, else O(C · log n) rounds (the widest window halves) of one
//     order-statistics lookup and C rank counts, O(C² · log² n). Case 1
//     needs only the need-1 bucket's count.
//  3. Backfill (first fit from M in order): as for arrival order, per
//     round the jobs of the buckets that fit in order while the largest
//     still fits (one weighted selection), then one more.
//  4. Apply per bucket at its seam (preempt its last running jobs, start
//     its first waiting ones), a run of m jobs with one split and one join,
//     O(m + log n) (divisorseams.go), the engine called in the general
//     path's order.
//
// What remains. k with a prime factor p ≥ 5 under SRPT: Case 3 extracts
// "the k/p smallest" across needs from a set mixing served and unserved
// jobs, after which the general path arms a crossing timer at the earliest
// crossing of adjacent jobs of M, a pass over M. The selection above would
// do the extraction (up to p per level, O(C · log k · p · C · log² n) per
// decision); the timer would need, per extraction and per bucket, its last
// selected and first unselected job as candidates (only crossings at a
// selection's boundary can change the choice, O(C²) pairs per extraction),
// an argument not yet written down and tested against the all-pairs
// timers. Gittins order, k with a prime factor ≥ 5: no timers, only Case 3
// to implement on counts (divisorfast.go's fill has it) with the selection
// above. Gittins with two classes of one need (ranks never rising): a
// need's running jobs are several run groups (one per class, srptfast.go)
// whose order across one another moves, so each class is a bucket of its
// own (classBuckets): the sets the recursion cuts are unions of those too,
// and Case 1's equal needs are taken across their buckets by the selection
// (dsCase1). Ranks that rise with age
// break the per-bucket order itself (gittins.go).

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
	// M's jobs per need bucket: every case's counts (need-1 jobs, even and
	// odd needs, needs divisible by p) follow from them in O(C), and Case 1
	// serves from them (dfCase1).
	cnt := p.dfCount(list, depth)
	ones := 0
	if b := p.bucketOf(scale); b >= 0 {
		ones = int(cnt[b])
	}
	if 6*ones >= kk {
		p.dfCase1(list, cnt, kk, scale)
		return
	}
	buf := p.depthBuf(&p.dfBuf, depth, len(list))
	lp := int(p.lpf[kk])
	if lp <= 3 { // Case 2 (kk = 1 is always Case 1 when M is non-empty)
		n2, n3 := 0, 0
		for b, c := range cnt {
			n := int(p.bneed[b]) / scale
			if n%2 == 0 {
				n2 += int(c)
			} else if n > 1 {
				n3 += int(c)
			}
		}
		if 2*n2 >= 3*n3 {
			if n2 > 0 {
				for _, i := range list {
					if (int(p.slots[i].need)/scale)%2 == 0 {
						buf = append(buf, i)
					}
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
	for b, c := range cnt {
		if (int(p.bneed[b])/scale)%lp == 0 {
			np += int(c)
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

// dfCount returns the jobs of list per need bucket (in p.dfCnt), by one
// pass over list, except at depth 0: there list is decide's new M (at most
// k jobs), which decide counted per bucket into p.counts as it merged, and
// those counts are taken instead (one pass over up to k slots fewer per
// decision).
func (p *Policy) dfCount(list []int32, depth int) []int32 {
	cnt := p.dfCnt
	if depth == 0 {
		copy(cnt, p.counts[:p.nBuckets])
		return cnt
	}
	clear(cnt)
	for _, i := range list {
		cnt[p.slots[i].bucket]++
	}
	return cnt
}

// bucketOf is the need bucket of need n (-1: no class needs n); buckets
// are in descending need.
func (p *Policy) bucketOf(n int) int {
	for b, bn := range p.bneed {
		if int(bn) <= n {
			if int(bn) == n {
				return b
			}
			break
		}
	}
	return -1
}

// dfCase1 is App. C.1.1 on (list, kk, scale); list has at most kk jobs,
// cnt[b] of them in need bucket b. In descending need (buckets in
// ascending index), ties by the ordering, jobs are served while the next
// one fits: whole buckets, then the first floor(rem/need) of the first
// bucket that does not fit whole, and nothing after it. Then the need-1
// (at this scale) jobs not yet served, in the ordering, while servers
// remain: with the first phase's, the first of that bucket. So each
// bucket serves its first cnt[b] jobs in the ordering, cnt turned into
// quotas, and one pass over list marks them (no sort by need).
func (p *Policy) dfCase1(list []int32, cnt []int32, kk, scale int) {
	rem := kk
	stopped := false
	for b, c := range cnt {
		if stopped || c == 0 {
			cnt[b] = 0
			continue
		}
		t := int(c)
		if n := int(p.bneed[b]) / scale; n > 0 { // (n ≥ 1: needs at this scale are multiples of it)
			t = min(t, rem/n)
			rem -= t * n
		}
		cnt[b] = int32(t)
		stopped = t < int(c)
	}
	if b := p.bucketOf(scale); b >= 0 && rem > 0 {
		// the need-1 jobs past the first phase's, while servers remain
		// (the bucket's count in list is at least its quota plus these:
		// the quota marks at most the jobs there are)
		cnt[b] += int32(rem)
	}
	for _, i := range list {
		sl := &p.slots[i]
		if cnt[sl.bucket] > 0 {
			cnt[sl.bucket]--
			sl.serve = true
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
