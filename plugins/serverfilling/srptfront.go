package serverfilling

// The front of a bucket's waiting jobs on ServerFilling's treap path (not
// the wide path, not DivisorFilling): the first waiting jobs, up to
// frontCap of them, kept in a slice in descending order (sb.front, its last
// element the bucket's first waiting job), the waiting treap (sb.root)
// holding the others, every one of which follows every job of the front.
//
// Why. Under SRPT a job preempted or arriving mostly goes first among its
// bucket's waiting jobs, and a start takes the first one: at the L = 5000
// rate of BenchmarkLevels (k = 2048) 394 k of the 412 k insertions into a
// waiting treap were at rank 0, and the 407 k starts from it took its
// first job; the decisions' rank lookups (M's last waiting job, the first
// outside M, the least waiting job) are of the first few ranks. In the
// treap each of these is a descent of about ten dependent node loads (a
// split for an insertion); at the end of a slice it is one load, and an
// insertion inside the front moves at most frontCap ids.
//
// The order is the waiting treap's, (key, arrival index), so the waiting
// jobs and their ranks are the same whichever side holds a job; no
// decision depends on where they are. The treap's kept ranks (wAtKept)
// count from the treap's first job. A run preempted at once (preemptRun,
// preemptRunBlocks, which join the treap) first empties the front into
// the treap (frontFlush); a run started at once takes the front's jobs
// first, then splits the treap (startRunBlocks).

// frontCap is the most jobs a bucket's front holds: an insertion inside it
// moves up to frontCap ids; one at its start when it is full sends the
// front's last job in order to the treap, where it goes first.
//
// 256 so that a run of narrow jobs preempted or evicted at once by a wide
// job's start (up to 128 on BenchmarkLevelsH2 and BenchmarkLevels at the
// L = 5000 rate), which joins the front (frontRun), stays there with the
// jobs already in it until the wide job completes and the run restarts
// from the front (startRunBlocks): with 64 the rest went through the treap
// both ways (tBuild, tSetKeys, tMerge, then tSplitRank, tCollect). At that
// rate 64 -> 128 -> 256 -> 512 took 1208.4, 1181.2, 1169.0 and 1162.6 M
// instructions a replication on H2 durations (Levels 1061.3, 1043.7,
// 1041.2 M; the L = 10 rows within 0.2 M), and CPU time (medians of six
// alternated runs) 206, 196, 195 and (five runs) 205 cpu-ns/event on H2,
// 164, 158 and 153 on exponential durations: past 256 the insertions'
// longer moves outweigh what is saved.
const frontCap = 256

// usesFront reports whether the waiting jobs have a front (see above).
func (p *Policy) usesFront() bool { return p.fastSRPT && !p.wide && p.ord == SRPTOrder }

// waitInsert adds waiting job i to bucket sb's waiting jobs and returns its
// rank among them (with a front; the callers insert into the treap
// themselves otherwise).
func (p *Policy) waitInsert(sb *sbucket, i int32) int32 {
	if !p.usesFront() {
		var r int32
		sb.root, r = p.tInsert(sb.root, i, modeKey)
		if p.fastSRPT {
			sb.keptInsert(r, i)
		}
		return r
	}
	return p.frontInsert(sb, i)
}

// frontInsert is waitInsert with a front (usesFront).
func (p *Policy) frontInsert(sb *sbucket, i int32) int32 {
	f := sb.front
	n := len(f)
	sl := &p.slots[i]
	k, id := sl.key, sl.id
	if n > 0 && n < frontCap {
		if e := &p.slots[f[n-1]]; pairBefore(k, id, e.key, e.id) {
			sb.front = append(f, i) // first of all: the usual case
			return 0
		}
	}
	if n == 0 {
		// The front is empty: i starts it if it precedes the treap's jobs.
		if sb.root >= 0 {
			if a := &p.tn[p.tFirst(sb.root)]; !pairBefore(k, id, a.v, a.id) {
				return p.waitTreapInsert(sb, i, 0)
			}
		}
		sb.front = append(f, i)
		return 0
	}
	if last := &p.slots[f[0]]; !pairBefore(k, id, last.key, last.id) {
		return p.waitTreapInsert(sb, i, int32(n)) // after the whole front
	}
	// j: the front's jobs after i (a prefix, the front descending; f[0]
	// is after i).
	lo, hi := 1, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if e := &p.slots[f[m]]; pairBefore(k, id, e.key, e.id) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	j := lo
	if n == frontCap { // full: its last job in order goes to the treap
		y := f[0]
		var r int32
		sb.root, r = p.tInsert(sb.root, y, modeKey)
		sb.keptInsert(r, y)
		copy(f, f[1:])
		f = f[:n-1]
		j--
		n--
	}
	f = append(f, 0)
	copy(f[j+1:], f[j:n])
	f[j] = i
	sb.front = f
	return int32(n - j)
}

// waitTreapInsert inserts i into sb's waiting treap, behind the front's n
// jobs, and returns its rank among all the waiting jobs.
func (p *Policy) waitTreapInsert(sb *sbucket, i, n int32) int32 {
	var r int32
	sb.root, r = p.tInsert(sb.root, i, modeKey)
	sb.keptInsert(r, i)
	return n + r
}

// waitDeleteMin removes sb's first waiting job (there is one); short
// enough to inline, as the treap's removal was where it is called.
func (p *Policy) waitDeleteMin(sb *sbucket) {
	if f := sb.front; len(f) > 0 {
		sb.front = f[:len(f)-1]
	} else {
		p.waitTreapDeleteMin(sb)
	}
}

// waitTreapDeleteMin removes the first job of sb's waiting treap. Not
// inlined, so that waitDeleteMin is.
//
//go:noinline
func (p *Policy) waitTreapDeleteMin(sb *sbucket) {
	sb.root = p.tDeleteMin(sb.root)
	if p.fastSRPT {
		sb.keptDeleteMin()
	}
}

// waitSize is the number of sb's waiting jobs (wSize with the front).
func (p *Policy) waitSize(sb *sbucket) int32 {
	return int32(len(sb.front)) + p.wSize(sb)
}

// waitCountLess is the number of sb's waiting jobs ahead of x in the order
// less (wCountLess with the front): a prefix of the waiting jobs, so a
// suffix of the front, then the treap's count if the whole front is ahead.
func (p *Policy) waitCountLess(sb *sbucket, x int32) int32 {
	f := sb.front
	n := len(f)
	if n == 0 {
		return p.wCountLess(sb, x)
	}
	if p.less(f[0], x) { // the whole front
		return int32(n) + p.wCountLess(sb, x)
	}
	lo, hi := 1, n // f[0] not ahead; the first index ahead of x, or n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p.less(f[m], x) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return int32(n - lo)
}

// frontFlush moves sb's front into its waiting treap (before a run is
// split from or joined to the treap): each job in turn, from the last in
// order, goes first in the treap (tPlace without a split).
func (p *Policy) frontFlush(sb *sbucket) {
	for _, y := range sb.front {
		sb.root, _ = p.tInsert(sb.root, y, modeKey)
	}
	sb.front = sb.front[:0]
	sb.kept = [2]struct{ r, x int32 }{}
}
