package coordinator

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// Spot verification (docs/security.md, "Spot verification"): results are
// deterministic, so a sample of a campaign's tasks (sweep.Sampled: a
// fraction of them, chosen from the campaign seed and the task id) is run
// again on a worker other than the one whose result was accepted, and the
// two records are compared bit for bit: the task and the engine's result
// (record.Record's Task and Result as JSON, every float's exact value;
// the provenance, which names hosts and times, is not compared). A
// mismatch is run a third time on a third worker and the majority decides.
//
// Everything the verification knows is in storage: the accepted record is
// copied to protocol.VerifyKey(c, t, 0) before round 1 is requested (so
// that a replaced result is still known as the one that was checked), and
// each round's record is at VerifyKey(c, t, round). A restarted
// coordinator rebuilds every decision from these records; only the
// waiting times start again. The campaign is finalised once every sampled
// task has an outcome, and its report is written to
// protocol.VerifyReportKey.

// Verification defaults (Options.VerifyPoll, VerifyWait, VerifyRepublish).
const (
	DefaultVerifyPoll      = time.Second
	DefaultVerifyWait      = 10 * time.Minute
	DefaultVerifyRepublish = 30 * time.Second
)

// verifyState is a campaign's spot verification (guarded by co.mu).
type verifyState struct {
	frac float64
	seed uint64
	// seen is the length of the task list already sampled (a precision
	// campaign appends tasks).
	seen  int
	order []string // sampled task ids in task-list order
	tasks map[string]*verifyTask
	// allIn is when every task first had a record (zero: not yet): the
	// waits for other workers count from then, not from a request's
	// publication, so that a request queued behind the campaign's own
	// tasks is not given up while they run.
	allIn    time.Time
	settled  bool
	reported bool
	// epoch is when this verification (or its latest restart by a
	// resubmission) began: part of its requests' message ids
	// (protocol.VerifyMsgID).
	epoch int64
	// carryChecked says whether storage was looked at for tasks verified
	// outside this sample (carry); carried counts those taken in.
	carryChecked bool
	carried      int
}

// verifyTask is one sampled task.
type verifyTask struct {
	protocol.VerifyTask
	recs [3]*record.Record // accepted, round 1, round 2
	// round is the round requested (0: none yet), try its publications,
	// published the last one's time, checked when its message was last
	// found still in the stream. The two are apart: a request that other
	// workers keep passing on (worker/verify.go) is always in the stream,
	// and counting that as a publication put the end of the wait off for
	// ever.
	round, try         int
	published, checked time.Time
	mismatch           bool // the round-1 mismatch was logged
}

// kept is the round whose result the campaign keeps: the accepted one
// (0), or the third run's when the second and third outvoted it (2,
// verifyDecide replaces it). verify.json's agrees are relative to it:
// relative to round 0 they said the outvoted result agreed and the
// majority did not.
func (vt *verifyTask) kept() int {
	r0, r1, r2 := vt.recs[0], vt.recs[1], vt.recs[2]
	if sameResult(r1, r2) && !sameResult(r0, r2) {
		return 2
	}
	return 0
}

func (vt *verifyTask) final() bool { return vt.Outcome != "" && vt.Outcome != protocol.VerifyPending }

func (co *Coordinator) verifyPoll() time.Duration {
	return cmpOr(co.o.VerifyPoll, DefaultVerifyPoll)
}

func (co *Coordinator) verifyWait() time.Duration { return cmpOr(co.o.VerifyWait, DefaultVerifyWait) }

func (co *Coordinator) verifyRepublish() time.Duration {
	return cmpOr(co.o.VerifyRepublish, DefaultVerifyRepublish)
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// initVerifyLocked (co.mu held) sets up c's verification from its state
// (CampaignState.Verify) once its task list is known; a resubmission with
// another fraction starts it again.
func (co *Coordinator) initVerifyLocked(c *campaign) {
	f := c.st.Verify
	if f <= 0 || c.tl == nil || c.st.Spec == nil {
		c.ver = nil
		return
	}
	if c.ver != nil && c.ver.frac == f {
		c.ver.settled, c.ver.reported = false, false
		c.ver.allIn, c.ver.epoch = time.Time{}, time.Now().UnixNano()
		c.ver.retryUnverified()
		return
	}
	c.ver = &verifyState{frac: f, seed: c.st.Spec.Seed, tasks: map[string]*verifyTask{}, epoch: time.Now().UnixNano()}
	c.ver.sample(c.tl)
}

// retryUnverified makes the tasks no second (or third) worker ran pending
// again, for a campaign submitted again with the same fraction: another
// worker may have joined since. They stayed unverified, while a restarted
// coordinator, which rebuilds the state, verified them: the same command
// gave two answers.
func (v *verifyState) retryUnverified() {
	for _, vt := range v.tasks {
		if vt.Outcome == protocol.VerifyNoSecond || vt.Outcome == protocol.VerifyNoMajority && vt.recs[2] == nil {
			vt.Outcome, vt.Detail, vt.Disagreeing, vt.Runs, vt.Nondeterministic = protocol.VerifyPending, "", nil, nil, ""
			vt.round, vt.try, vt.mismatch = 0, 0, false
		}
	}
}

// sample adds the sampled tasks among those appended since the last call.
func (v *verifyState) sample(tl *taskList) {
	for ; v.seen < tl.Len(); v.seen++ {
		tid := tl.ID(v.seen)
		if sweep.Sampled(v.frac, v.seed, tid) {
			v.order = append(v.order, tid)
			v.tasks[tid] = &verifyTask{VerifyTask: protocol.VerifyTask{Task: tid, Outcome: protocol.VerifyPending}}
		}
	}
}

// verifySettled reports whether c's verification is over (no
// verification: true); complete() waits for it before finalising.
func (c *campaign) verifySettled() bool { return c.ver == nil || c.ver.settled }

// verifyLoop advances every running campaign's verification each
// VerifyPoll until ctx ends.
func (co *Coordinator) verifyLoop(ctx context.Context) {
	tk := time.NewTicker(co.verifyPoll())
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		co.mu.Lock()
		var camps []*campaign
		for _, c := range co.camps {
			if c.ver != nil && !c.ver.settled && c.st.State == protocol.CampaignRunning && c.tl != nil {
				camps = append(camps, c)
			}
		}
		co.mu.Unlock()
		for _, c := range camps {
			co.verifyCampaign(ctx, c)
		}
	}
}

// verifyItem is a sampled task to advance, with what the campaign knew of
// it when the step began.
type verifyItem struct {
	vt           *verifyTask
	done, failed bool
}

// verifyCampaign advances each unsettled sampled task of c by one step,
// and finalises c when every one has an outcome.
func (co *Coordinator) verifyCampaign(ctx context.Context, c *campaign) {
	co.mu.Lock()
	v := c.ver
	if v == nil {
		co.mu.Unlock()
		return
	}
	v.sample(c.tl)
	allIn := c.done.len()+len(c.failed) >= c.tl.Len() && (c.prec == nil || c.decidedAll())
	if allIn && v.allIn.IsZero() {
		v.allIn = time.Now()
	}
	var items []verifyItem
	for _, tid := range v.order {
		if vt := v.tasks[tid]; !vt.final() {
			_, failed := c.failed[tid]
			items = append(items, verifyItem{vt: vt, done: c.done.has(tid), failed: failed})
		}
	}
	carry := !v.carryChecked
	co.mu.Unlock()
	if len(items) > 0 || carry {
		have, err := co.verifyRecords(ctx, c.id)
		if err != nil {
			co.o.Logf("coordinator: campaign %s: verification: %v", c.id, err)
			return
		}
		if carry {
			items = append(items, co.carryVerified(c, have)...)
		}
		for _, it := range items {
			co.verifyStep(ctx, c, it, have)
		}
	}
	co.mu.Lock()
	settled := allIn && !slices.ContainsFunc(v.order, func(tid string) bool { return !v.tasks[tid].final() })
	v.settled = settled
	report := settled && !v.reported
	co.mu.Unlock()
	if report {
		if err := co.writeVerifyReport(ctx, c); err != nil {
			co.mu.Lock()
			v.settled = false // written again next time
			co.mu.Unlock()
			co.o.Logf("coordinator: campaign %s: writing the verification report: %v", c.id, err)
			return
		}
		co.maybeFinalize(ctx, c)
	}
}

// carryVerified takes into c's verification the tasks that a second
// worker ran for an earlier sample (a round-1 record in storage, have) but
// that this sample does not hold: the campaign submitted again with a
// lower fraction, or a coordinator restarted after that. They are then
// decided from their records like the sampled ones (a mismatch still gets
// its third run) and counted in the status (Carried). Before, such a
// resubmission dropped them, and with them every mismatch found on them
// and the workers it named, from the status and verify.json.
func (co *Coordinator) carryVerified(c *campaign, have map[string]bool) []verifyItem {
	prefix := protocol.VerifyPrefix(c.id)
	co.mu.Lock()
	defer co.mu.Unlock()
	v := c.ver
	if v == nil {
		return nil
	}
	v.carryChecked = true
	var tids []string
	for k := range have {
		tid, ok := strings.CutSuffix(strings.TrimPrefix(k, prefix), ".1.json")
		if !ok || v.tasks[tid] != nil {
			continue
		}
		if _, known := c.tl.Index(tid); known {
			tids = append(tids, tid)
		}
	}
	slices.Sort(tids) // one order whatever the listing's
	var items []verifyItem
	for _, tid := range tids {
		vt := &verifyTask{VerifyTask: protocol.VerifyTask{Task: tid, Outcome: protocol.VerifyPending}}
		v.tasks[tid] = vt
		v.order = append(v.order, tid)
		v.carried++
		_, failed := c.failed[tid]
		items = append(items, verifyItem{vt: vt, done: c.done.has(tid), failed: failed})
	}
	return items
}

// rejectedVerifyKey is where round r's record of task tid goes when it is
// refused (not a record of the task, or written by an excluded worker):
// one per round, so that a refused round 2 does not overwrite a refused
// round 1's evidence (it did, under one name per task).
func rejectedVerifyKey(c, tid string, r int) string {
	return RejectedKey(c, fmt.Sprintf("%s.verify.%d", tid, r))
}

// verifyRecords lists the verification records of a campaign in storage.
func (co *Coordinator) verifyRecords(ctx context.Context, id string) (map[string]bool, error) {
	keys, err := co.o.Store.List(ctx, protocol.VerifyPrefix(id))
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(keys))
	for _, k := range keys {
		have[k] = true
	}
	return have, nil
}

// verifyStep advances one sampled task: it loads the records that have
// appeared, then requests, waits for or decides the next round.
func (co *Coordinator) verifyStep(ctx context.Context, c *campaign, it verifyItem, have map[string]bool) {
	vt := it.vt
	switch {
	case it.failed:
		co.setVerifyOutcome(c, vt, protocol.VerifySkipped, "the task failed: there is no result to verify", nil)
		return
	case !it.done:
		return
	}
	if !co.loadVerifyRecords(ctx, c, vt, have) {
		return
	}
	co.refuseExcluded(ctx, c, vt)
	r0, r1, r2 := vt.recs[0], vt.recs[1], vt.recs[2]
	switch {
	case r0.Failed():
		co.setVerifyOutcome(c, vt, protocol.VerifySkipped, "the accepted record is a failure: there is no result to verify", nil)
	case r1 == nil:
		if co.verifyRequest(ctx, c, vt, 1, []string{r0.Provenance.Worker}) {
			co.setVerifyOutcome(c, vt, protocol.VerifyNoSecond,
				fmt.Sprintf("unverified (no second worker): no worker other than %s ran it within %v", workerName(r0), co.verifyWait()), nil)
		}
	case sameResult(r0, r1):
		co.setVerifyOutcome(c, vt, protocol.VerifyOK, "", nil)
	case r2 == nil:
		co.noteMismatch(c, vt)
		if co.verifyRequest(ctx, c, vt, 2, []string{r0.Provenance.Worker, r1.Provenance.Worker}) {
			co.setVerifyOutcome(c, vt, protocol.VerifyNoMajority,
				fmt.Sprintf("%s and %s disagree and no third worker ran it within %v: the accepted result is kept, unconfirmed",
					workerName(r0), workerName(r1), co.verifyWait()),
				[]string{r0.Provenance.Worker, r1.Provenance.Worker})
		}
	default:
		// The third run is in (its request noted the mismatch, or a
		// rebuilt state reads all three): deciding says what there is to
		// say. Noting it here too told "running it a third time" again at
		// each resubmission and restart, for a task decided long before.
		co.verifyDecide(ctx, c, vt)
	}
}

// loadVerifyRecords reads the records of vt that have appeared in storage
// (have) and, before the first request, copies the accepted record to
// round 0. It reports whether the accepted record is known.
func (co *Coordinator) loadVerifyRecords(ctx context.Context, c *campaign, vt *verifyTask, have map[string]bool) bool {
	for r := range vt.recs {
		key := protocol.VerifyKey(c.id, vt.Task, r)
		if vt.recs[r] != nil || !have[key] {
			continue
		}
		data, err := co.o.Store.Get(ctx, key)
		if err == nil {
			vt.recs[r], err = record.Decode(data, vt.Task)
		}
		if err != nil {
			// Not a record of this task (forged, truncated): moved aside,
			// so that the round is requested again.
			co.o.Logf("coordinator: campaign %s: verification record %s: %v; moved to %s", c.id, key, err, rejectedVerifyKey(c.id, vt.Task, r))
			vt.recs[r] = nil
			if data != nil {
				_ = co.o.Store.Put(ctx, rejectedVerifyKey(c.id, vt.Task, r), data)
			}
			_ = co.o.Store.Delete(ctx, key)
			if r == 0 {
				return false
			}
		}
	}
	if vt.recs[0] != nil {
		return true
	}
	rec, _, err := record.Read(ctx, co.o.Store, c.id, vt.Task)
	if err != nil {
		co.o.Logf("coordinator: campaign %s: verification of %s: reading its result: %v", c.id, vt.Task, err)
		return false
	}
	data, err := json.Marshal(rec)
	created := false
	if err == nil {
		created, err = co.o.Store.PutIfAbsent(ctx, protocol.VerifyKey(c.id, vt.Task, 0), data)
	}
	if err != nil {
		co.o.Logf("coordinator: campaign %s: verification of %s: %v", c.id, vt.Task, err)
		return false
	}
	if created {
		vt.recs[0] = rec
	}
	// Otherwise the next step reads round 0 back: what is stored there is
	// what was checked, even if another coordinator wrote it first.
	return created
}

// refuseExcluded moves aside a round's record that a worker the round
// excluded wrote (or one that names no worker), so that the round is
// requested again: such a record confirms nothing. Workers honour the
// exclusion (worker/verify.go); a record copied in storage from the
// accepted one (round 0 to round 1) was counted as verified, the
// accepted worker confirming itself.
func (co *Coordinator) refuseExcluded(ctx context.Context, c *campaign, vt *verifyTask) {
	for r := 1; r < len(vt.recs); r++ {
		rec := vt.recs[r]
		if rec == nil {
			continue
		}
		w := rec.Provenance.Worker
		excluded := w == ""
		for _, prev := range vt.recs[:r] {
			excluded = excluded || prev != nil && prev.Provenance.Worker == w
		}
		if !excluded {
			continue
		}
		key := protocol.VerifyKey(c.id, vt.Task, r)
		co.o.Logf("coordinator: campaign %s: verification record %s was written by %s, whom its round excluded (or it names no worker): moved to %s, the round is requested again",
			c.id, key, workerName(rec), rejectedVerifyKey(c.id, vt.Task, r))
		if data, err := co.o.Store.Get(ctx, key); err == nil {
			_ = co.o.Store.Put(ctx, rejectedVerifyKey(c.id, vt.Task, r), data)
		}
		_ = co.o.Store.Delete(ctx, key)
		vt.recs[r] = nil
		// Checked for at the next step: published again (a new try, a
		// new message id) unless the request is still in the stream.
		vt.published, vt.checked = time.Time{}, time.Time{}
	}
}

// verifyRequest publishes round's request for vt (again, when its message
// is gone without a record after VerifyRepublish) and reports whether the
// wait for it is over: VerifyWait after the campaign's last task had a
// record and at least half of it after the request's last publication.
// The wait cannot tell a request that waits from one that runs, so it
// must exceed the longest replication (--verify-wait; docs/security.md).
func (co *Coordinator) verifyRequest(ctx context.Context, c *campaign, vt *verifyTask, round int, exclude []string) (timedOut bool) {
	now := time.Now()
	co.mu.Lock()
	allIn := c.ver.allIn
	co.mu.Unlock()
	if vt.round != round {
		vt.round, vt.try, vt.published, vt.checked = round, 0, now, now
		co.publishVerify(ctx, c, vt, exclude)
		return false
	}
	wait := co.verifyWait()
	if !allIn.IsZero() && now.Sub(allIn) > wait && now.Sub(vt.published) > wait/2 {
		_ = co.h.Tasks.Purge(ctx, jetstream.WithPurgeSubject(protocol.VerifySubject(c.id, vt.Task, round)))
		return true
	}
	if now.Sub(vt.checked) < co.verifyRepublish() {
		return false
	}
	vt.checked = now
	if _, err := co.h.Tasks.GetLastMsgForSubject(ctx, protocol.VerifySubject(c.id, vt.Task, round)); err == nil {
		return false // still queued (or running): not published again
	} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
		co.o.Logf("coordinator: campaign %s: verification of %s: %v", c.id, vt.Task, err)
		return false
	}
	vt.try++
	vt.published = now
	co.publishVerify(ctx, c, vt, exclude)
	return false
}

func (co *Coordinator) publishVerify(ctx context.Context, c *campaign, vt *verifyTask, exclude []string) {
	t, ok := c.tl.Get(vt.Task)
	if !ok {
		return
	}
	co.mu.Lock()
	epoch := c.ver.epoch
	co.mu.Unlock()
	data, err := json.Marshal(protocol.VerifyMsg{Campaign: c.id, Task: t, Round: vt.round, Exclude: exclude, Store: co.storeID})
	if err == nil {
		_, err = co.js.Publish(ctx, protocol.VerifySubject(c.id, vt.Task, vt.round), data,
			jetstream.WithMsgID(protocol.VerifyMsgID(c.id, vt.Task, vt.round, vt.try, epoch)))
	}
	if err != nil {
		co.o.Logf("coordinator: campaign %s: publishing verification of %s: %v", c.id, vt.Task, err)
	}
}

// noteMismatch logs the first mismatch of vt once: both workers, hosts
// and plugin sha256s.
func (co *Coordinator) noteMismatch(c *campaign, vt *verifyTask) {
	if vt.mismatch {
		return
	}
	vt.mismatch = true
	co.o.Logf("coordinator: campaign %s: VERIFICATION MISMATCH on task %s: accepted result from %s differs from the re-run on %s; running it a third time",
		c.id, vt.Task, describeRun(vt.recs[0]), describeRun(vt.recs[1]))
}

// verifyDecide judges three runs: the majority's result stands (an
// outvoted accepted result is replaced); three different results leave
// the accepted one in place, unresolved.
func (co *Coordinator) verifyDecide(ctx context.Context, c *campaign, vt *verifyTask) {
	r0, r1, r2 := vt.recs[0], vt.recs[1], vt.recs[2]
	w0, w1, w2 := r0.Provenance.Worker, r1.Provenance.Worker, r2.Provenance.Worker
	switch {
	case sameResult(r0, r2):
		co.setVerifyOutcome(c, vt, protocol.VerifyMajority,
			fmt.Sprintf("%s disagreed with %s and %s: the accepted result stands", describeRun(r1), workerName(r0), workerName(r2)),
			[]string{w1})
	case sameResult(r1, r2):
		if err := co.replaceAccepted(ctx, c, vt.Task, r2); err != nil {
			co.o.Logf("coordinator: campaign %s: replacing the outvoted result of %s: %v (tried again)", c.id, vt.Task, err)
			return
		}
		co.setVerifyOutcome(c, vt, protocol.VerifyMajority,
			fmt.Sprintf("the accepted result from %s was outvoted by %s and %s: replaced by theirs, the old one moved to %s",
				describeRun(r0), workerName(r1), workerName(r2), RejectedKey(c.id, vt.Task)),
			[]string{w0})
	case sameCode(r0, r1, r2):
		// One binary, three answers: the policy is not deterministic
		// (it reads a clock, an unseeded generator, a map's order), and
		// naming the three workers would blame the wrong thing.
		code := codeName(r0)
		co.setVerifyOutcome(c, vt, protocol.VerifyNoMajority,
			fmt.Sprintf("three different results from the same code (%s) on %s, %s and %s: the policy is not deterministic (msjfarm plugin check runs a request three times and says so); the accepted result is kept, unconfirmed",
				code, workerName(r0), workerName(r1), workerName(r2)),
			nil)
		co.mu.Lock()
		vt.Nondeterministic = code
		co.mu.Unlock()
	default:
		co.setVerifyOutcome(c, vt, protocol.VerifyNoMajority,
			fmt.Sprintf("three different results (%s; %s; %s): the accepted result is kept, unconfirmed",
				describeRun(r0), describeRun(r1), describeRun(r2)),
			[]string{w0, w1, w2})
	}
}

// sameCode reports whether the runs name one implementation
// (record.ImplOf): the same engine and plugin binary, or the same
// engine's built-in policy.
func sameCode(rs ...*record.Record) bool {
	first, ok := record.ImplOf(rs[0].Provenance)
	for _, r := range rs[1:] {
		im, ok2 := record.ImplOf(r.Provenance)
		ok = ok && ok2 && im == first
	}
	return ok
}

// codeName names a run's policy and code for a report.
func codeName(r *record.Record) string {
	im, _ := record.ImplOf(r.Provenance)
	return fmt.Sprintf("policy %s, engine %s, %s", r.Task.Policy, im.Engine, im.Policy)
}

// replaceAccepted makes rec the campaign's result of task tid: the
// outvoted object is moved to RejectedKey (moveAside), so that no later
// campaign reuses it, and rec is filed in its place.
func (co *Coordinator) replaceAccepted(ctx context.Context, c *campaign, tid string, rec *record.Record) error {
	if cur, _, err := record.Read(ctx, co.o.Store, c.id, tid); err == nil && sameResult(cur, rec) &&
		cur.Provenance.Worker == rec.Provenance.Worker {
		return nil // replaced by an earlier step (or coordinator)
	}
	co.moveAside(ctx, c.id, tid)
	if _, ok := record.ImplOf(rec.Provenance); ok {
		_, _, err := record.Store(ctx, co.o.Store, c.id, rec)
		return err
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return co.o.Store.Put(ctx, storage.ResultKey(c.id, tid), data)
}

// setVerifyOutcome records vt's outcome and logs it.
func (co *Coordinator) setVerifyOutcome(c *campaign, vt *verifyTask, outcome, detail string, disagreeing []string) {
	co.mu.Lock()
	vt.Outcome, vt.Detail, vt.Disagreeing = outcome, detail, disagreeing
	vt.Runs = vt.Runs[:0]
	kept := vt.kept()
	for i, r := range vt.recs {
		if r != nil {
			vt.Runs = append(vt.Runs, protocol.VerifyRun{Worker: r.Provenance.Worker, Host: r.Provenance.Host,
				PluginSHA256: r.Provenance.PluginSHA256, Error: r.Error, Agrees: i == kept || sameResult(vt.recs[kept], r)})
		}
	}
	co.mu.Unlock()
	switch outcome {
	case protocol.VerifyMajority, protocol.VerifyNoMajority:
		co.o.Logf("coordinator: campaign %s: verification of task %s: %s; disagreeing worker(s): %s",
			c.id, vt.Task, detail, strings.Join(disagreeing, ", "))
	case protocol.VerifyNoSecond:
		co.o.Logf("coordinator: campaign %s: verification of task %s: %s", c.id, vt.Task, detail)
	}
}

// sameResult reports whether two records hold the same result bit for
// bit: the task and the engine's result, as JSON (every float64 written
// in the shortest form that reads back to the same bits), provenance
// excluded. A failed record agrees with nothing.
func sameResult(a, b *record.Record) bool {
	if a == nil || b == nil || a.Failed() || b.Failed() {
		return false
	}
	ja, erra := json.Marshal(struct {
		T sweep.Task
		R *sim.Result
	}{a.Task, a.Result})
	jb, errb := json.Marshal(struct {
		T sweep.Task
		R *sim.Result
	}{b.Task, b.Result})
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
}

func workerName(r *record.Record) string {
	if r.Provenance.Worker == "" {
		return "an unnamed worker"
	}
	return "worker " + r.Provenance.Worker
}

// describeRun names the worker, host and plugin sha256 of a run.
func describeRun(r *record.Record) string {
	s := fmt.Sprintf("%s (host %s, plugin sha256 %s)", workerName(r), orNone(r.Provenance.Host), orNone(r.Provenance.PluginSHA256))
	if r.Error != "" {
		s += ": " + r.Error
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// status summarises the verification (co.mu held).
func (v *verifyState) status() protocol.VerifyStatus {
	s := protocol.VerifyStatus{Fraction: v.frac, Sampled: len(v.order), Carried: v.carried}
	bad, nondet := map[string]int{}, map[string]int{}
	for _, tid := range v.order {
		vt := v.tasks[tid]
		switch vt.Outcome {
		case protocol.VerifyOK:
			s.Verified++
		case protocol.VerifyMajority, protocol.VerifyNoMajority:
			s.Mismatched++
			if len(s.Findings) < 10 {
				s.Findings = append(s.Findings, tid+": "+vt.Detail)
			}
		case protocol.VerifyNoSecond:
			s.Unverified++
		case protocol.VerifySkipped:
			s.Skipped++
		default:
			s.Pending++
		}
		for _, w := range vt.Disagreeing {
			bad[w]++
		}
		if vt.Nondeterministic != "" {
			nondet[vt.Nondeterministic]++
		}
	}
	for w, n := range bad {
		s.Disagreeing = append(s.Disagreeing, fmt.Sprintf("%s (%d %s)", w, n, plural(n, "task")))
	}
	sort.Strings(s.Disagreeing)
	for code, n := range nondet {
		s.Nondeterministic = append(s.Nondeterministic, fmt.Sprintf("%s (%d %s)", code, n, plural(n, "task")))
	}
	sort.Strings(s.Nondeterministic)
	return s
}

func plural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}

// writeVerifyReport writes the campaign's verification report and logs
// its summary.
func (co *Coordinator) writeVerifyReport(ctx context.Context, c *campaign) error {
	co.mu.Lock()
	v := c.ver
	rep := protocol.VerifyReport{Campaign: c.id, Status: v.status()}
	for _, tid := range v.order {
		rep.Tasks = append(rep.Tasks, v.tasks[tid].VerifyTask)
	}
	co.mu.Unlock()
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := co.o.Store.Put(ctx, protocol.VerifyReportKey(c.id), data); err != nil {
		return err
	}
	s := rep.Status
	co.o.Logf("coordinator: campaign %s: verification done: %d sampled, %d verified, %d mismatched, %d unverified (no second worker), %d skipped; disagreeing: %s; not deterministic: %s",
		c.id, s.Sampled, s.Verified, s.Mismatched, s.Unverified, s.Skipped, cmp.Or(strings.Join(s.Disagreeing, ", "), "none"), cmp.Or(strings.Join(s.Nondeterministic, ", "), "none"))
	co.mu.Lock()
	v.reported = true
	co.mu.Unlock()
	return nil
}

// VerifyCounts are the verification outcomes of the campaigns this
// coordinator knows, by outcome, and the number of sampled tasks on which
// each worker was found disagreeing (its metrics, package monitor).
func (co *Coordinator) VerifyCounts() (outcomes, disagreeing map[string]int) {
	outcomes, disagreeing = map[string]int{}, map[string]int{}
	co.mu.Lock()
	defer co.mu.Unlock()
	for _, c := range co.camps {
		if c.ver == nil {
			continue
		}
		for _, vt := range c.ver.tasks {
			outcomes[vt.Outcome]++
			for _, w := range vt.Disagreeing {
				disagreeing[w]++
			}
		}
	}
	return outcomes, disagreeing
}

// storedVerifyStatus fills in the verification of a finished campaign
// this coordinator did not run (loaded from its stored state after a
// restart) from its report in storage.
func (co *Coordinator) storedVerifyStatus(ctx context.Context, s *protocol.Status) {
	if s.Verify != nil || s.State == protocol.CampaignRunning {
		return
	}
	data, err := co.o.Store.Get(ctx, protocol.VerifyReportKey(s.Campaign))
	if err != nil {
		return
	}
	var r protocol.VerifyReport
	if json.Unmarshal(data, &r) == nil {
		s.Verify = &r.Status
	}
}
