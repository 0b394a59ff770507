package serverfilling

// The back of a bucket's running jobs under SRPT on ServerFilling's treap
// path (usesFront): the last running jobs in the treap's order (fin,
// arrival), up to backCap of them, in an ascending slice (sb.seq), every
// job of the running treap (p.rroot) ahead of every one of them. While the
// back has jobs, the kept last job (sb.last, runLast) is its last one and
// is known (lastOK); when it has none, the treap's, as without a back.
//
// Why. Past saturation at k = 2048 (BenchmarkLevels, the L = 5000 rate)
// a bucket's running jobs change at both ends: a preemption takes the last
// one (204 k), about half of the starts go after the last one (208 k), and
// a completion takes the first (208 k). In the treap, the ends are walks
// down its spines (tAppend, tDeleteLast and tLast); at the end of a slice
// the last job is one load. The starts that land inside the order (203 k,
// nearly all of them more than 256 jobs from either end) stay the treap's.
//
// Runs moved at once (preemptRun, startRun) first empty the back into the
// treap (backFlush).

// backCap is the most jobs a bucket's back holds; a start inside it moves
// up to backCap ids, one after it when it is full sends the back's first
// job to the treap's end.
const backCap = 64

// backAdd places started job i (fin set) in sb's back if it belongs there
// (it follows the treap's last job) and reports whether it did.
func (p *Policy) backAdd(sb *sbucket, i int32) bool {
	b := sb.seq
	n := len(b)
	sl := &p.slots[i]
	f, id := sl.fin, sl.id
	if n == 0 {
		if t := p.rroot[sl.bucket]; t >= 0 {
			if !sb.lastOK {
				sb.last, sb.lastOK = p.tLast(t), true
			}
			if !nodeBefore(&p.tn[sb.last], f, id) {
				return false
			}
		}
		sb.seq = append(b, i)
		sb.last, sb.lastOK = i, true
		return true
	}
	if n < backCap {
		if e := &p.slots[b[n-1]]; pairBefore(e.fin, e.id, f, id) {
			sb.seq = append(b, i) // after the last: the usual case
			sb.last = i
			return true
		}
	}
	if e := &p.slots[b[0]]; pairBefore(f, id, e.fin, e.id) {
		return false // ahead of the back: the treap's
	}
	j := int(p.sBoundOn(b, i, true)) // the back's jobs ahead of i (b[0] is)
	if n == backCap {
		// Full: its first job goes to the treap's end.
		p.backSpill(sb)
		b = sb.seq
		j--
		n--
	}
	b = append(b, 0)
	copy(b[j+1:], b[j:n])
	b[j] = i
	sb.seq = b
	sb.last = b[n]
	return true
}

// backSpill moves sb's back's first job to the end of the running treap,
// which it follows (tAppend: no comparison).
func (p *Policy) backSpill(sb *sbucket) {
	b := sb.seq
	y := b[0]
	g := p.slots[y].bucket
	p.rroot[g] = p.tAppend(p.rroot[g], y, modeFall)
	copy(b, b[1:])
	sb.seq = b[:len(b)-1]
}

// backRemove takes running job i out of sb's back if it is there and
// reports whether it was.
func (p *Policy) backRemove(sb *sbucket, i int32) bool {
	b := sb.seq
	n := len(b)
	if n == 0 {
		return false
	}
	if b[n-1] == i { // the last: a preemption, as a rule
		sb.seq = b[:n-1]
		if n > 1 {
			sb.last = b[n-2]
		} else {
			sb.lastOK = false // the treap's last: walked to when asked
		}
		return true
	}
	sl := &p.slots[i]
	if e := &p.slots[b[0]]; pairBefore(sl.fin, sl.id, e.fin, e.id) {
		return false
	}
	j := 0
	for b[j] != i {
		j++
	}
	copy(b[j:], b[j+1:])
	sb.seq = b[:n-1]
	return true // (not the last: the kept last stays)
}

// backFlush moves sb's back to the end of the running treap, in order.
func (p *Policy) backFlush(sb *sbucket) {
	b := sb.seq
	if len(b) == 0 {
		return
	}
	g := p.slots[b[0]].bucket
	for _, y := range b {
		p.rroot[g] = p.tAppend(p.rroot[g], y, modeFall)
	}
	sb.seq = b[:0] // the kept last, the back's, is now the treap's
}
