package maxweight

import "slices"

// val is a packing value compared lexicographically: hi is the MaxWeight
// weight Σ Q_n·x_n, lo the tie-breaks (see MaxWeight). The lexicographic
// order on Z² is compatible with addition and with scaling by positive
// integers, which is all the solver needs.
type val struct{ hi, lo int64 }

func (a val) less(b val) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }
func (a val) add(b val) val   { return val{a.hi + b.hi, a.lo + b.lo} }
func (a val) sub(b val) val   { return val{a.hi - b.hi, a.lo - b.lo} }
func (a val) mul(m int) val   { return val{a.hi * int64(m), a.lo * int64(m)} }

// cmp orders a before b when a is larger (decreasing).
func cmpDesc(a, b val) int {
	switch {
	case b.less(a):
		return -1
	case a.less(b):
		return 1
	}
	return 0
}

// item is one item type of a bounded knapsack: up to b units, each of weight w
// (a server need) and value v. g is the need group the units count towards.
type item struct {
	g int
	w int
	b int
	v val
}

// knapsack solves max Σ v_i t_i subject to Σ w_i t_i <= capacity and
// 0 <= t_i <= b_i, integer: the MaxWeight packing problem, whose item types
// are need groups (B §2: x_n jobs of need n, weight Q_n each).
//
// Enumerating packings is hopeless beyond toy systems (a packing of k = 2048
// servers by Borg cell B's 26 needs is one of about 1.6·10^24 partitions of
// 2048). The solver is exact whatever the instance; its last resort is
// dynamic programming, a bounded knapsack with the sliding-window-maximum
// recurrence, O(capacity) per item type, i.e. O(k · #item types) per
// decision, plus O(capacity · #item types) int32s of reconstruction table
// (reused: nothing is allocated per decision in steady state).
//
// Before the DP it tries cheaper exact methods, in order:
//
//  1. The LP relaxation: taking the item types greedily in decreasing value
//     per server reaches the LP bound exactly whenever the critical item
//     type (the first that does not fit entirely) fills the remaining
//     capacity with whole units, or when everything fits; then the greedy
//     packing is optimal. This is the common case under congestion (e.g. k
//     or more need-1 jobs, which have the highest value per server).
//  2. Branch and bound from the greedy packing, depth first over the item
//     types in decreasing density, pruning with the LP bound, for at most
//     bbNodes nodes. It settles in a few nodes the typical case where one
//     wide job (a need-2000 job in Borg cell B, weight 1) does not fit beside
//     many narrow ones of far higher weight, which defeats test 1.
//  3. The DP, if the node budget ran out: exact whatever the instance.
type knapsack struct {
	items  []item
	order  []int   // item indices in decreasing value density
	t      []int   // solution: units of each item type
	dp, nd []val   // best value with weight <= c, before/after an item type
	choice []int32 // units of item i chosen at capacity c: choice[i*(cap+1)+c]
	dqIdx  []int32 // sliding-window deque: positions m
	dqVal  []val   // and their values dp[r+m·w] − m·v
	bestT  []int   // branch and bound: incumbent
	prefW  []int   // prefix sums of b·w along ks.order
	prefV  []val   // prefix sums of b·v along ks.order
	bestV  val
	nodes  int
	budget int   // node budget of branch and bound (0: bbNodes)
	solves int64 // number of solves (for tests)
	bbRuns int64 // number of solves that needed branch and bound
	dpRuns int64 // number of solves that needed the DP
}

// bbNodes is the node budget of the branch and bound: beyond it the DP
// (O(capacity · #items)) is the better bet.
const bbNodes = 2048

func (ks *knapsack) reset() { ks.items = ks.items[:0] }

func (ks *knapsack) add(it item) {
	if it.b > 0 {
		ks.items = append(ks.items, it)
	}
}

// solve fills ks.t with an optimal solution for the items added since reset.
// Values must be positive (hi > 0).
func (ks *knapsack) solve(capacity int) {
	n := len(ks.items)
	ks.t = slices.Grow(ks.t[:0], n)[:n]
	clear(ks.t)
	if n == 0 || capacity <= 0 {
		return
	}
	ks.solves++
	for i := range ks.items { // no item type can exceed the capacity
		if m := capacity / ks.items[i].w; ks.items[i].b > m {
			ks.items[i].b = m
		}
	}
	if ks.greedy(capacity) {
		return
	}
	ks.bbRuns++
	if ks.branchAndBound(capacity) {
		return
	}
	ks.dpRuns++
	ks.dynamic(capacity)
}

// branchAndBound searches for a packing better than the greedy one in
// ks.t (ks.order already sorted by density) and reports whether it proved
// the result optimal within the node budget; ks.t then holds it.
func (ks *knapsack) branchAndBound(capacity int) bool {
	n := len(ks.items)
	ks.prefW = append(ks.prefW[:0], 0)
	ks.prefV = append(ks.prefV[:0], val{})
	for k, i := range ks.order {
		it := ks.items[i]
		ks.prefW = append(ks.prefW, ks.prefW[k]+it.b*it.w)
		ks.prefV = append(ks.prefV, ks.prefV[k].add(it.v.mul(it.b)))
	}
	ks.bestT = append(ks.bestT[:0], ks.t...)
	ks.bestV = val{}
	for i, it := range ks.items {
		ks.bestV = ks.bestV.add(it.v.mul(ks.t[i]))
	}
	clear(ks.t)
	ks.nodes = 0
	if !ks.dfs(0, capacity, val{}) {
		return false
	}
	copy(ks.t, ks.bestT[:n])
	return true
}

// dfs explores the item types from position level of ks.order with
// capacity c left and value v so far; false when the node budget ran out.
func (ks *knapsack) dfs(level, c int, v val) bool {
	budget := ks.budget
	if budget == 0 {
		budget = bbNodes
	}
	if ks.nodes++; ks.nodes > budget {
		return false
	}
	if level == len(ks.order) {
		if ks.bestV.less(v) {
			ks.bestV = v
			copy(ks.bestT, ks.t)
		}
		return true
	}
	i := ks.order[level]
	it := ks.items[i]
	for u := min(it.b, c/it.w); u >= 0; u-- {
		// The LP bound of this branch falls as u does (item i has the
		// highest density left), so the first pruned u ends the loop.
		if !ks.beats(level+1, c-u*it.w, v.add(it.v.mul(u))) {
			break
		}
		ks.t[i] = u
		if !ks.dfs(level+1, c-u*it.w, v.add(it.v.mul(u))) {
			ks.t[i] = 0
			return false
		}
	}
	ks.t[i] = 0
	return true
}

// beats reports whether the LP bound of the item types from position level
// of ks.order on, with capacity c and value v so far, exceeds the incumbent:
// only then can the branch hold a strictly better packing. The LP fills
// whole item types in order until the critical one, found by binary search
// on the prefix sums of ks.order, so this is O(log #items).
func (ks *knapsack) beats(level, c int, v val) bool {
	pw, pv := ks.prefW, ks.prefV
	n := len(ks.order)
	target := pw[level] + c
	if pw[n] <= target { // everything left fits
		return ks.bestV.less(v.add(pv[n].sub(pv[level])))
	}
	lo, hi := level, n-1 // smallest j with pw[j+1] > target
	for lo < hi {
		mid := (lo + hi) / 2
		if pw[mid+1] > target {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	it := ks.items[ks.order[lo]]
	v = v.add(pv[lo].sub(pv[level]))
	// Fractional critical item: v + r·v_j/w_j > best ⇔ v·w_j + r·v_j > best·w_j.
	r := target - pw[lo]
	return ks.bestV.mul(it.w).less(v.mul(it.w).add(it.v.mul(r)))
}

// greedy packs by decreasing value density and reports whether the packing
// is provably optimal (it meets the LP bound).
func (ks *knapsack) greedy(capacity int) bool {
	n := len(ks.items)
	ks.order = slices.Grow(ks.order[:0], n)[:n]
	for i := range ks.order {
		ks.order[i] = i
	}
	it := ks.items
	slices.SortFunc(ks.order, func(a, b int) int {
		// v_a/w_a vs v_b/w_b as v_a·w_b vs v_b·w_a.
		if c := cmpDesc(it[a].v.mul(it[b].w), it[b].v.mul(it[a].w)); c != 0 {
			return c
		}
		return a - b
	})
	c := capacity
	var value val // value of the greedy packing so far
	for k, i := range ks.order {
		u := min(it[i].b, c/it[i].w)
		ks.t[i] = u
		left := c - u*it[i].w
		if u < it[i].b && left > 0 {
			// i is the critical item type and the LP would take a fraction
			// of one more unit. Complete the greedy packing and compare it
			// with the LP bound value + c·v_i/w_i, i.e. compare
			// total·w_i with value·w_i + c·v_i.
			total := value.add(it[i].v.mul(u))
			rest := left
			for _, j := range ks.order[k+1:] {
				uj := min(it[j].b, rest/it[j].w)
				ks.t[j] = uj
				rest -= uj * it[j].w
				total = total.add(it[j].v.mul(uj))
			}
			return !total.mul(it[i].w).less(value.mul(it[i].w).add(it[i].v.mul(c)))
		}
		c = left
		value = value.add(it[i].v.mul(u))
	}
	return true
}

// dynamic is the exact bounded-knapsack DP. For item (w, v, b) and each
// residue r mod w, with c = r + m·w:
//
//	new[c] = max_{m−b <= m' <= m} (old[r+m'·w] − m'·v) + m·v,
//
// a sliding-window maximum kept in a monotone deque. On ties the deque keeps
// the later m' (fewer units of the current item type), so remaining ties go
// to item types added earlier.
func (ks *knapsack) dynamic(capacity int) {
	n := len(ks.items)
	width := capacity + 1
	ks.dp = slices.Grow(ks.dp[:0], width)[:width]
	ks.nd = slices.Grow(ks.nd[:0], width)[:width]
	ks.choice = slices.Grow(ks.choice[:0], n*width)[:n*width]
	ks.dqIdx = slices.Grow(ks.dqIdx[:0], width)[:width]
	ks.dqVal = slices.Grow(ks.dqVal[:0], width)[:width]
	clear(ks.dp)
	dp, nd := ks.dp, ks.nd
	dqIdx, dqVal := ks.dqIdx, ks.dqVal
	for i, it := range ks.items {
		ch := ks.choice[i*width : (i+1)*width]
		w, v, b := it.w, it.v, it.b
		for r := 0; r < w && r <= capacity; r++ {
			head, tail := 0, 0
			m := 0
			for c := r; c <= capacity; c += w {
				f := dp[c].sub(v.mul(m))
				for tail > head && !f.less(dqVal[tail-1]) {
					tail--
				}
				dqIdx[tail], dqVal[tail] = int32(m), f
				tail++
				if int(dqIdx[head]) < m-b {
					head++
				}
				nd[c] = dqVal[head].add(v.mul(m))
				ch[c] = int32(m) - dqIdx[head]
				m++
			}
		}
		dp, nd = nd, dp
	}
	c := capacity
	for i := n - 1; i >= 0; i-- {
		u := int(ks.choice[i*width+c])
		ks.t[i] = u
		c -= u * ks.items[i].w
	}
}
