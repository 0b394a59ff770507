package serverfilling

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/rng"
)

// TestApplySeamsRuns checks applySeamsRuns (mid50seams.go) against the
// path it replaced on ServerFilling-SRPT's runSets' path: takes on the
// counts nRun + w, then applySeams (decideSRPT, srptfast.go). The states
// are those of real runs (random workloads of narrow classes, k = 16 to
// 256, both packings, crossings on and off), taken on a deep copy of the
// policy before it handles an arrival or a crossing timer and reshaped
// there as decisions may find them (reshapeSeams): some running jobs made
// waiting, among them a bucket's first ones, whose keys now are below
// those of its later running jobs, as arrivals of small jobs would be, and
// each bucket's count of waiting jobs in M redrawn, so that the takes cut
// buckets that have waiting jobs ahead of running ones. Both forms then
// run on two deep copies of that state, and the test fails if their
// preempted or started lists differ (order included), if what the engine
// would be given differs (the preemptions sorted as engineCallsRuns sorts
// them when they do not commute; the starts sorted on the old path, and
// only when startsMixed says so on the new one), or if any of the
// policy's state differs afterwards, setStopper's included: the whole
// Policy is compared (every bucket's nRun, w, waiting front, treap and
// kept ranks, running blocks and last job, every slot's key, fin, rate and
// start, p.cut, p.rem, p.idle, p.stopper), but for takes' scratch
// (p.take, p.counts), which applySeamsRuns does not write.
//
// It also counts, from the old path's lists and takes, the two branches
// of applySeamsRuns' bucket loop that no other test or benchmark took: an
// exchange in a bucket whose count of running jobs was not its take (the
// exchange loop right after seamMovesRuns: after preemptions, after
// starts, after runs moved at once), and a second exchange in one bucket
// in one decision (after moves or not). A bucket's moves go one way, so
// its exchanges are the lesser of its preemptions and its starts. It fails
// if any of these is reached fewer than 200 times (a second exchange: 500
// times): the test must exercise them. With a break after the first
// exchange, or no exchange after moves, it fails.
//
// Only such made states reach those branches: the engine's runs do not.
// Before any event no bucket's least waiting job precedes its last running
// one (the test checks it on each state before reshaping it): a
// decision's exchanges leave none, a waiting job's key is frozen and a
// bucket's running keys all fall at its one rate (need/k), a preemption
// (the bucket's last running jobs) and an arrival behind M's last job
// (which does not decide) add waiting jobs behind its running ones. So at
// a decision only the arriving job can precede running jobs of its bucket,
// and after one exchange with it none is left: one exchange at most per
// bucket. And an arrival adds to M only itself (the repair's other steps
// only evict: no outside job precedes M's last after it), so the wider
// buckets' counts do not grow and its bucket's take is not below its
// running jobs: its moves are starts, of the arriving job first (its least
// waiting job), after which no exchange is left either.
func TestApplySeamsRuns(t *testing.T) {
	type seamCase struct {
		k      int
		needs  []int
		rho    float64
		params map[string]any
	}
	cases := []seamCase{
		{16, []int{1, 2, 4}, 1.1, map[string]any{"packing": PackingStop}},
		{16, []int{1, 3, 5}, 1.1, map[string]any{"packing": PackingStop, "crossings": false}},
		{16, []int{1, 3, 5}, 1.1, map[string]any{"packing": PackingSkip}},
		{64, []int{1, 3, 8, 20}, 1.05, map[string]any{"packing": PackingStop}},
		{64, []int{1, 3, 8, 20}, 1.05, map[string]any{"packing": PackingSkip, "crossings": false}},
		{128, []int{1, 1, 3, 12}, 1.1, map[string]any{"packing": PackingStop}},
		{256, []int{1, 1, 1, 2, 8, 40}, 1.05, map[string]any{"packing": PackingSkip}},
		{256, []int{1, 1, 2, 16}, 1.05, map[string]any{"packing": PackingStop, "crossings": false}},
	}
	r := rng.New(50, 3)
	var looks, states, afterPre, afterStarts, afterRuns, repeated, repeatedAfter int
	for ci, c := range cases {
		name := fmt.Sprintf("seams-%d/k=%d/needs=%v/%v", ci, c.k, c.needs, c.params)
		w := mixedWorkload(name, c.k, c.needs, c.rho, uint64(500+ci))
		p := configured(t, SRPTOrder, ServerFilling, c.params)
		h := &seamsHook{Policy: p}
		h.at = func(s *sdk.System) {
			if p.runs == nil || p.wide || !p.fastSRPT {
				t.Fatalf("%s: not on the runSets' path", name)
			}
			if r.IntN(2) == 0 {
				return
			}
			now := s.Now()
			a := clonePolicy(p)
			a.flushPending()
			for i := range a.sb { // the run's state: no waiting job ahead of a running one
				sb := &a.sb[i]
				if sb.nRun == 0 || a.waitSize(sb) == 0 {
					continue
				}
				x, y := sb.last, sb.root
				if n := len(sb.front); n > 0 {
					y = sb.front[n-1]
				} else {
					y = a.tFirst(y)
				}
				a.refreshSRPT(&a.slots[x], now)
				if a.less(y, x) {
					t.Fatalf("%s at %g: before the event, waiting job %d of bucket %d precedes its last running job %d", name, now, y, i, x)
				}
				looks++
			}
			reshapeSeams(a, r, now)
			b := clonePolicy(a)
			nRun0 := make([]int32, len(a.sb))
			for i := range a.sb {
				nRun0[i] = a.sb[i].nRun
			}

			preA, startsA := a.applySeamsRuns(s, now)
			cnt := b.counts[:len(b.sb)]
			for i := range b.sb {
				cnt[i] = b.sb[i].nRun + b.sb[i].w
			}
			preB, startsB := b.applySeams(s, b.takes(cnt), now)
			states++

			if !slices.Equal(preA, preB) || !slices.Equal(startsA, startsB) {
				t.Fatalf("%s at %g: applySeamsRuns preempts %v and starts %v, takes and applySeams %v and %v",
					name, now, preA, startsA, preB, startsB)
			}
			if ea, eb := engineOrder(a, s, preA, startsA, a.startsMixed(startsA)), engineOrder(b, s, preB, startsB, true); !reflect.DeepEqual(ea, eb) {
				t.Fatalf("%s at %g: engine calls %v, takes and applySeams %v", name, now, ea, eb)
			}
			a.setStopper()
			b.setStopper()
			a.take, a.counts = b.take, b.counts // takes' scratch, which applySeamsRuns does not write
			// The lists' scratch, where applySeamsRuns keeps its lists
			// (decideSRPT cuts them to length 0 after the engine calls).
			a.next, a.starts = b.next, b.starts
			if f := policyDiff(a, b); f != "" {
				t.Fatalf("%s at %g: the policies differ afterwards in %s", name, now, f)
			}

			// The branches, from the old path's lists and takes: a bucket's
			// moves go one way, so its exchanges are the lesser of its
			// preemptions and its starts.
			nb := len(b.sb)
			pre, st := make([]int, nb), make([]int, nb)
			for _, x := range preB {
				pre[b.slots[x].bucket]++
			}
			for _, x := range startsB {
				st[b.slots[x].bucket]++
			}
			for i := range nb {
				ex, d := min(pre[i], st[i]), nRun0[i]-b.take[i]
				switch {
				case ex > 0 && d > 0:
					afterPre++
				case ex > 0 && d < 0:
					afterStarts++
				}
				if ex > 0 && (d >= seamRun || -d >= seamRun) {
					afterRuns++
				}
				if ex > 1 {
					repeated++
					if d != 0 {
						repeatedAfter++
					}
				}
			}
		}
		cfg := sim.Config{Seed: uint64(ci + 1), Arrivals: 1500, MaxInSystem: 20000}
		if _, err := sim.Run(w, h, cfg); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	afterMoves := afterPre + afterStarts
	t.Logf("%d bucket looks in the runs' states; %d states; an exchange after moves in %d buckets (after preemptions %d, after starts %d; after runs moved at once %d); "+
		"more than one exchange in %d (%d after moves)", looks, states, afterMoves, afterPre, afterStarts, afterRuns, repeated, repeatedAfter)
	if afterPre < 200 || afterStarts < 200 || afterRuns < 200 || repeated < 500 || repeatedAfter < 200 {
		t.Fatalf("branches not reached enough: an exchange after preemptions in %d buckets, after starts in %d, after runs moved at once in %d "+
			"(want 200 each); more than one exchange in %d (want 500), %d of them after moves (want 200)",
			afterPre, afterStarts, afterRuns, repeated, repeatedAfter)
	}
}

// seamsHook calls at before its policy handles each arrival and crossing
// timer.
type seamsHook struct {
	*Policy
	at func(s *sdk.System)
}

func (h *seamsHook) Arrive(s *sdk.System, j *sdk.Job) { h.at(s); h.Policy.Arrive(s, j) }
func (h *seamsHook) Timer(s *sdk.System, tag int)     { h.at(s); h.Policy.Timer(s, tag) }

// reshapeSeams turns p, between two decisions at now (pending starts
// placed), into a state the seams may meet. Per bucket: its first running
// jobs made waiting (toWaiting: their keys now, below those of the
// bucket's later running jobs, as arrivals of small jobs would be), or its
// last ones (as the repair's evictions), or random ones, or none; then its
// count of waiting jobs in M drawn again: as it was, all of them or at
// random. In three states of four, one bucket after the first with n ≥ 2
// running jobs is aimed at: 1 to n of its first running jobs wait, all its
// waiting jobs are in M, and the wider buckets before it have as many of
// their waiting jobs in M (in a random order of those buckets) as leave it
// the servers of a take t drawn from 1 to n − 1, so that the takes cut it
// below its running jobs while waiting jobs precede running ones: its
// moves (preemptions when t is below the running jobs left, starts when
// above) are followed by exchanges, most often more than one.
func reshapeSeams(p *Policy, r *rng.Stream, now float64) {
	aim, n := -1, 0
	if r.IntN(4) > 0 {
		var cand []int
		for b := 1; b < len(p.sb); b++ {
			if p.sb[b].nRun >= 2 {
				cand = append(cand, b)
			}
		}
		if len(cand) > 0 {
			aim = cand[r.IntN(len(cand))]
			n = int(p.sb[aim].nRun)
		}
	}
	for b := range p.sb {
		sb := &p.sb[b]
		run := p.runs[b].runJobs(nil)
		mode, e := r.IntN(5), r.IntN(len(run)+1)
		if b == aim {
			mode, e = 0, 1+r.IntN(len(run))
		}
		switch mode {
		case 0, 1: // the first e: ahead of the others
			for _, x := range run[:e] {
				p.toWaiting(x, now)
			}
		case 2: // the last e
			for _, x := range run[len(run)-e:] {
				p.toWaiting(x, now)
			}
		case 3: // any
			for _, x := range run {
				if r.IntN(3) == 0 {
					p.toWaiting(x, now)
				}
			}
		}
		ws := p.waitSize(sb)
		switch r.IntN(4) {
		case 0: // as it was
			sb.w = min(sb.w, ws)
		case 1:
			sb.w = ws
		default:
			sb.w = int32(r.IntN(int(ws) + 1))
		}
	}
	if aim < 0 {
		return
	}
	p.sb[aim].w = p.waitSize(&p.sb[aim])
	room := p.k - (1+r.IntN(n-1))*int(p.bneed[aim]) // the servers left for the buckets before it
	for b := range aim {
		room -= int(p.sb[b].nRun * p.bneed[b])
	}
	order := make([]int, aim)
	for i := range order { // a random order of the buckets before it
		j := r.IntN(i + 1)
		order[i], order[j] = order[j], i
	}
	for _, b := range order {
		sb := &p.sb[b]
		sb.w = min(p.waitSize(sb), int32(max(room, 0))/p.bneed[b])
		room -= int(sb.w * p.bneed[b])
	}
}

// engineOrder is what engineCallsRuns gives the engine for a decision's
// preemptions and starts (no evictions): the preemptions sorted when their
// order matters to the engine, the starts sorted if sortStarts; as arrival
// indices.
func engineOrder(p *Policy, s *sdk.System, pre, starts []int32, sortStarts bool) [2][]int64 {
	pre, starts = slices.Clone(pre), slices.Clone(starts)
	if !s.PreemptionsCommute() {
		slices.SortFunc(pre, p.cmpWas(true))
	}
	if sortStarts {
		slices.SortFunc(starts, p.cmpWas(false))
	}
	var ids [2][]int64
	for _, x := range pre {
		ids[0] = append(ids[0], p.slots[x].id)
	}
	for _, x := range starts {
		ids[1] = append(ids[1], p.slots[x].id)
	}
	return ids
}

// clonePolicy is a deep copy of p: every slice (to its capacity), array,
// struct and pointer copied, so that the copy and p share no state, except
// the engine's jobs (*sdk.Job, read through the System) and maps,
// interfaces and functions (none of which the SRPT path's decisions
// change).
func clonePolicy(p *Policy) *Policy {
	q := new(Policy)
	deepCopy(reflect.ValueOf(q).Elem(), reflect.ValueOf(p).Elem(), map[unsafe.Pointer]reflect.Value{})
	return q
}

var jobPtr = reflect.TypeFor[*sdk.Job]()

// flatType reports whether a value of type t is copied whole by
// assignment: it holds no pointer (but to an engine job), slice, map,
// interface or function.
func flatType(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer:
		return t == jobPtr
	case reflect.Slice, reflect.Map, reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return false
	case reflect.Array:
		return flatType(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !flatType(t.Field(i).Type) {
				return false
			}
		}
	}
	return true
}

// opened is v (addressable) without the read-only mark of an unexported
// field, so that it can be read and set.
func opened(v reflect.Value) reflect.Value {
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

// deepCopy copies src into dst (both settable, dst zero), see clonePolicy.
func deepCopy(dst, src reflect.Value, memo map[unsafe.Pointer]reflect.Value) {
	t := src.Type()
	if flatType(t) {
		dst.Set(src)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			deepCopy(opened(dst.Field(i)), opened(src.Field(i)), memo)
		}
	case reflect.Array:
		for i := range src.Len() {
			deepCopy(dst.Index(i), src.Index(i), memo)
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		c := src.Cap()
		all, ns := src.Slice(0, c), reflect.MakeSlice(t, c, c)
		if flatType(t.Elem()) {
			reflect.Copy(ns, all)
		} else {
			for i := range c {
				deepCopy(ns.Index(i), all.Index(i), memo)
			}
		}
		dst.Set(ns.Slice(0, src.Len()))
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		if v, ok := memo[src.UnsafePointer()]; ok {
			dst.Set(v)
			return
		}
		np := reflect.New(t.Elem())
		memo[src.UnsafePointer()] = np
		deepCopy(np.Elem(), src.Elem(), memo)
		dst.Set(np)
	default: // maps, interfaces, functions: shared
		dst.Set(src)
	}
}

// policyDiff names the first field of Policy in which a and b differ
// (reflect.DeepEqual), with the first differing element of a slice, or
// returns "".
func policyDiff(a, b *Policy) string {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i := range va.NumField() {
		fa, fb := opened(va.Field(i)), opened(vb.Field(i))
		if reflect.DeepEqual(fa.Interface(), fb.Interface()) {
			continue
		}
		name := va.Type().Field(i).Name
		if fa.Kind() == reflect.Slice && fa.Len() == fb.Len() {
			for k := range fa.Len() {
				if ea, eb := fa.Index(k).Interface(), fb.Index(k).Interface(); !reflect.DeepEqual(ea, eb) {
					return fmt.Sprintf("%s[%d]: %+v, want %+v", name, k, ea, eb)
				}
			}
		}
		return fmt.Sprintf("%s: %+v, want %+v", name, fa.Interface(), fb.Interface())
	}
	return ""
}
