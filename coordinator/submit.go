package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// ErrUnknownCampaign is returned for a campaign id the coordinator has
// never seen.
var ErrUnknownCampaign = errors.New("unknown campaign")

// Submit validates and plans a sweep, stores its spec and manifest, and
// publishes every task that has no result yet and is not already queued.
// Submitting a campaign again resumes it (and revives a cancelled one);
// nothing is run twice. A validation error writes nothing.
//
// The steps: validate, campaignFor (the campaign's record, its task list
// planned), reset (under finalMu: never in the middle of a finalisation),
// storeCampaign, retryFailed (with RetryFailed), then publishSubmitted,
// which answers once the tasks are published or, for a campaign too
// large to publish within ctx's deadline, with the progress so far while
// the publication goes on in the background (SubmitReply.Publishing).
func (co *Coordinator) Submit(ctx context.Context, req protocol.SubmitRequest) (*protocol.SubmitReply, error) {
	specKey, camp, err := co.validate(ctx, &req)
	if err != nil {
		return nil, err
	}
	c, created := co.campaignFor(camp)
	rep, err := co.submitCampaign(ctx, c, req, camp, specKey)
	if err != nil && created {
		co.dropUnstored(c)
	}
	return rep, err
}

// dropUnstored forgets c, which a submission that failed before its
// campaign state was stored (the store refused the spec: a full disk, a
// rotated key) had created: status listed it for ever, "(no name, no
// state) … 0001-01-01", and cancel said "campaign … is : nothing was
// cancelled". A campaign NATS holds, or that another submission is
// working on, stays.
func (co *Coordinator) dropUnstored(c *campaign) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := co.h.Campaigns.Get(ctx, c.id); !errors.Is(err, jetstream.ErrKeyNotFound) {
		return
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.camps[c.id] == c && c.submitting == 0 {
		delete(co.camps, c.id)
	}
}

// submitCampaign stores and publishes a validated submission of c.
func (co *Coordinator) submitCampaign(ctx context.Context, c *campaign, req protocol.SubmitRequest, camp *sweep.Campaign, specKey string) (*protocol.SubmitReply, error) {
	release := co.beginSubmit(c)
	defer release()
	// Valid: the spec may be written (an inline one to its content key).
	if specKey == "" {
		var err error
		if specKey, err = protocol.PutSpec(ctx, co.o.Store, req.Spec); err != nil {
			return nil, err
		}
	}
	// A resubmission waits for an in-flight finalisation to end before it
	// resets the campaign's state: reset in the middle, the finalisation
	// closed a campaign marked running (Wait returned, the state stayed
	// running until the next reconcile) and, since finalizing was reset
	// here too, a second finalisation could overlap the first. The lock
	// is held through the retry of failed tasks, so that no finalisation
	// counts a failure that is being deleted.
	if err := co.resetAndStore(ctx, c, req, camp, specKey); err != nil {
		return nil, err
	}
	return co.publishSubmitted(ctx, c, camp, release)
}

// validate resolves and checks a submission: its spec, its plan (not its
// expansion: the tasks are generated as they are published, a 10^7-task
// campaign does not fit in memory as tasks), its plugin pins and trace.
func (co *Coordinator) validate(ctx context.Context, req *protocol.SubmitRequest) (string, *sweep.Campaign, error) {
	if req.Store != "" && req.Store != co.storeID {
		// Staged elsewhere: the spec, trace and pins are where this
		// coordinator and its workers do not read, and the submitter
		// looks for the results there. A submission to another store
		// ran with its results in the farm's, without a word, or failed
		// on pins "msjfarm submit" had written, to the other store.
		return "", nil, fmt.Errorf("the submission's --storage (store %s) is not this coordinator's (store %s, %s): give the farm's --storage, where the coordinator and its workers read",
			req.Store, co.storeID, co.o.Store.URL())
	}
	specKey, err := co.submittedSpec(ctx, req)
	if err != nil {
		return "", nil, err
	}
	req.Spec = req.Spec.ForFarm() // the coordinator never reads a trace
	if err := sweep.CheckVerify(req.Verify); err != nil {
		return "", nil, fmt.Errorf("invalid sweep: %w", err)
	}
	camp, err := sweep.Plan(req.Spec, co.catalog(req.Pins))
	if err != nil {
		return "", nil, fmt.Errorf("invalid sweep: %w", err)
	}
	if err := co.checkPins(ctx, camp.ID, req.Pins); err != nil {
		return "", nil, fmt.Errorf("invalid sweep: %w", err)
	}
	if err := co.checkTaskSize(camp); err != nil {
		return "", nil, fmt.Errorf("invalid sweep: %w", err)
	}
	// A trace is replayed from its uploaded content only (never from a
	// path): it must be in storage, with the size the sweep pins. The
	// coordinator never reads it; the workers bound and verify it.
	if tr := req.Spec.Trace; tr != nil {
		if err := storage.CheckTrace(ctx, co.o.Store, tr.SHA256, tr.Size, 0); err != nil {
			return "", nil, fmt.Errorf("invalid sweep: trace.sha256: %w", err)
		}
	}
	return specKey, camp, nil
}

// errFirstTask stops Campaign.Each at its first task.
var errFirstTask = errors.New("first task")

// checkTaskSize refuses a campaign whose first task's message does not fit
// in one message of the NATS server (its max_payload, less room for the
// headers): every task carries its workload, and a workload of 15,000
// classes made each task 1.5 MB. The campaign was created, its first
// publication failed ("maximum payload exceeded"), and each reconcile
// tried again: it stayed running for ever. A campaign's tasks differ
// only by their parameters and axes, so the first stands for the rest.
func (co *Coordinator) checkTaskSize(camp *sweep.Campaign) error {
	limit := co.nc.MaxPayload() - 4096
	if limit <= 0 {
		return nil
	}
	var size int
	err := camp.Each(func(t sweep.Task) error {
		data, err := co.taskMessage(camp.ID, t)
		if err != nil {
			return err
		}
		size = len(data)
		return errFirstTask
	})
	if err != nil && !errors.Is(err, errFirstTask) {
		return err
	}
	if int64(size) > limit {
		return fmt.Errorf("a task's message is %d bytes, more than the %d the NATS server takes in one (its max_payload, less room for headers): every task carries its workload; give fewer classes or samples", size, limit)
	}
	return nil
}

// campaignFor is the campaign camp describes (created if new).
func (co *Coordinator) campaignFor(camp *sweep.Campaign) (c *campaign, created bool) {
	co.mu.Lock()
	defer co.mu.Unlock()
	c = co.camps[camp.ID]
	if c == nil {
		c, created = &campaign{id: camp.ID, finished: make(chan struct{})}, true
		co.camps[camp.ID] = c
		co.adoptStrayLocked(c)
	}
	return c, created
}

// loadTaskList gives c its task list, generated from camp, if it has none
// yet: the ids of every task, which for 10^7 tasks takes minutes on a
// loaded machine, so that a submission does it after answering
// (publishSubmitted).
func (co *Coordinator) loadTaskList(c *campaign, camp *sweep.Campaign) error {
	co.mu.Lock()
	loaded := c.tl != nil
	co.mu.Unlock()
	if loaded {
		return nil
	}
	tl, err := newTaskList(camp)
	if err != nil {
		return err
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	if c.tl == nil {
		c.tl, c.warnings = tl, camp.Warnings
		c.done, c.failed, c.running = newTaskSet(tl), map[string]string{}, map[string]string{}
		c.initPoints()
		c.st.Total = c.tl.Len()
		co.initVerifyLocked(c)
	}
	return nil
}

// beginSubmit marks a submission of c in flight until its own reconcile
// starts (publishSubmitted) or Submit returns (release, which may be
// called more than once): the periodic reconcile leaves the
// campaign alone meanwhile, so that the submission's reply counts the
// tasks it published (not "already queued" by a reconcile that started
// between the campaign's reset and the submission's publication).
func (co *Coordinator) beginSubmit(c *campaign) (release func()) {
	co.mu.Lock()
	c.submitting++
	co.mu.Unlock()
	return sync.OnceFunc(func() {
		co.mu.Lock()
		c.submitting--
		co.mu.Unlock()
	})
}

// resetAndStore resets c to running for this submission and stores what
// the campaign is (state, spec, layout), then retries its failed tasks
// when asked, all under c.finalMu.
func (co *Coordinator) resetAndStore(ctx context.Context, c *campaign, req protocol.SubmitRequest, camp *sweep.Campaign, specKey string) error {
	created, epoch := time.Now().UTC(), 0
	known := false
	had := 0.0 // the campaign's spot-verification fraction so far
	if e, err := co.h.Campaigns.Get(ctx, c.id); err == nil {
		// An entry that does not decode or check is not trusted: a
		// creation time, epoch or store taken from it would be anyone's.
		old, err := readState(c.id, e.Value())
		if err != nil {
			old = protocol.CampaignState{}
		}
		if !old.Created.IsZero() {
			created, epoch, known, had = old.Created, old.Epoch, true, old.Verify
		}
		if err := co.leaveOtherStore(ctx, c.id, old); err != nil {
			return err
		}
	}
	if !known {
		// A NATS that never saw the campaign (msjfarm run's embedded one
		// starts empty each time, or the campaign was imported): the store's
		// manifest still knows when it was created. Taking now instead made
		// an older sweep run again the campaign "created last" under its
		// name, and its archive not the same file twice.
		if m := co.storedManifest(ctx, c.id); m != nil && !m.Created.IsZero() {
			created = m.Created.UTC()
			if m.Verify != nil && sweep.CheckVerify(*m.Verify) == nil {
				had = *m.Verify
			}
		}
	}
	if req.KeepVerify && had > 0 {
		// Submitted again with no fraction given: "submit it again" is
		// what many messages advise, and it turned the verification the
		// first submission asked for off without a word.
		req.Verify = had
	}
	c.finalMu.Lock()
	defer c.finalMu.Unlock()
	co.mu.Lock()
	if c.closed {
		c.finished, c.closed = make(chan struct{}), false
	}
	c.st = protocol.CampaignState{ID: c.id, Name: req.Spec.Name, State: protocol.CampaignRunning,
		Total: camp.Len(), Points: camp.Points, Created: created, Spec: req.Spec, SpecKey: specKey,
		Epoch: max(epoch, c.st.Epoch), Verify: req.Verify, Store: co.storeID}
	if c.tl != nil { // a precision campaign's list has grown
		c.st.Total = c.tl.Len()
	}
	co.initVerifyLocked(c)
	co.mu.Unlock()
	if err := co.storeCampaign(ctx, c, req.Spec); err != nil {
		return err
	}
	if req.RetryFailed {
		if err := co.loadTaskList(c, camp); err != nil {
			return err
		}
		return co.retryFailed(ctx, c)
	}
	return nil
}

// storeCampaign records the code each policy is expected to run with and
// writes the campaign's layout marker, spec, manifest and state, the
// entry last: an entry whose campaign has no manifest in the store is
// not trusted at the next start (crossCheck), and a coordinator stopped
// between the entry and the manifest, which came once the task list was
// generated (minutes for 10^7 tasks), left a first submission listed as
// unreadable and a resubmission of a finished campaign lost. Stopped
// between the manifest and the entry now, it leaves a running manifest
// beside no entry (listed as unknown to NATS, findUnknown) or beside the
// finished entry of a resubmitted campaign (the store wins: the
// submission runs on, recoverStates).
func (co *Coordinator) storeCampaign(ctx context.Context, c *campaign, f *sweep.File) error {
	// The code each policy is expected to run with, read again at every
	// submission: a newly pinned plugin binary means new content keys.
	impls, err := co.impls(ctx, c.id)
	if err != nil {
		return err
	}
	co.mu.Lock()
	c.impl = impls
	c.reused = 0
	co.mu.Unlock()
	if err := co.putCampaignObjects(ctx, c.id, f); err != nil {
		return err
	}
	if err := co.manifestBeforeEntry(ctx, c); err != nil {
		return err
	}
	return co.putState(ctx, c)
}

// manifestBeforeEntry writes c's manifest for the entry about to be
// written, unless the stored one already agrees with it (a running
// campaign submitted again with its verification fraction: the manifest,
// megabytes for 10^7 tasks, is written once the submission has its task
// list anyway, listAndPublish).
func (co *Coordinator) manifestBeforeEntry(ctx context.Context, c *campaign) error {
	co.mu.Lock()
	st := c.st
	co.mu.Unlock()
	if m, err := co.readManifestState(ctx, c.id); err == nil && m.State == st.State && stateDisagreement(&st, m) == "" {
		return nil
	}
	_, err := co.writeManifest(ctx, c, nil)
	return err
}

// putCampaignObjects writes campaign id's layout marker and spec.yaml, by
// which readers find it. The campaign's entries are references (layout
// 2) from the start; older campaigns were converted by record.Migrate
// when the coordinator started.
func (co *Coordinator) putCampaignObjects(ctx context.Context, id string, f *sweep.File) error {
	if err := co.o.Store.Put(ctx, storage.LayoutKey(id), storage.LayoutMarker); err != nil {
		return err
	}
	spec, err := SpecYAML(f)
	if err != nil {
		return err
	}
	return co.o.Store.Put(ctx, storage.CampaignSpecKey(id), spec)
}

// retryFailed deletes the failure records of c's failed tasks (and their
// task states), so that the reconcile that follows publishes them again.
func (co *Coordinator) retryFailed(ctx context.Context, c *campaign) error {
	if _, _, _, err := co.reconcile(ctx, c, false); err != nil {
		return err
	}
	co.mu.Lock()
	var failed []string
	for tid := range c.failed {
		failed = append(failed, tid)
	}
	co.mu.Unlock()
	if len(failed) > 0 {
		// The failure records are replaced by results: the checksums of
		// the last finalisation no longer describe the campaign (the next
		// finalisation writes them again).
		if err := co.o.Store.Delete(ctx, storage.ChecksumsKey(c.id)); err != nil {
			return err
		}
	}
	for _, tid := range failed {
		if err := co.o.Store.Delete(ctx, storage.ResultKey(c.id, tid)); err != nil {
			return err
		}
		_ = co.h.TaskStates.Delete(ctx, protocol.TaskKey(c.id, tid))
		co.mu.Lock()
		delete(c.failed, tid)
		if t, ok := c.tl.Get(tid); ok && c.pts != nil {
			c.setStatus(c.pts[t.Point], "") // judged again when it finishes
		}
		co.mu.Unlock()
	}
	return nil
}

// submitWait, when not negative, replaces the wait derived from the
// deadline (tests: a submission answered at once).
var submitWait time.Duration = -1

// submitMargin is the part of a submission's deadline kept for the reply:
// a publication still running then goes on in the background.
const submitMargin = 20 * time.Second

// publishSubmitted publishes c's tasks by a reconcile that runs on the
// coordinator's own context (not the request's), and answers when it
// ends, or, when ctx has a deadline that comes first (an API request's
// two minutes: a 10^7-task campaign takes longer to publish), with the
// progress so far. The publication then continues in the background; the
// stream is its record of progress: a coordinator restarted meanwhile
// publishes, on resuming the campaign, exactly the tasks with neither a
// message nor a result, so that nothing is lost and no task is queued
// twice (dedup ids aside, a message duplicated anyway finds its result
// stored and is not run again).
func (co *Coordinator) publishSubmitted(ctx context.Context, c *campaign, camp *sweep.Campaign, release func()) (*protocol.SubmitReply, error) {
	type result struct {
		published, queued, existing int
		err                         error
	}
	c.progress.begin()
	done := make(chan result, 1)
	var answered atomic.Bool
	bctx := co.backgroundCtx(ctx)
	go func() {
		c.recMu.Lock()
		defer c.recMu.Unlock()
		release() // this submission's reconcile runs: the periodic ones wait for it
		p, q, e, err := co.listAndPublish(bctx, c, camp)
		if answered.Load() {
			// Nobody waits for it: the next reconcile publishes what
			// this one did not.
			if err != nil {
				co.o.Logf("coordinator: campaign %s: publishing in the background: %v", c.id, err)
			} else {
				co.o.Logf("coordinator: campaign %s: published in the background: %d tasks", c.id, p)
			}
		}
		done <- result{p, q, e, err}
	}()
	var budget <-chan time.Time
	if dl, ok := ctx.Deadline(); ok {
		budget = time.After(max(time.Until(dl)-submitMargin, time.Until(dl)/2))
	}
	if submitWait >= 0 {
		budget = time.After(submitWait)
	}
	var r result
	pending := 0
	select {
	case r = <-done:
		if r.err != nil && ctx.Err() == nil {
			// The campaign is stored and stays: say so, and what follows.
			// A submission refused this way (the NATS server's store full)
			// left a campaign "running" that the submitter thought was
			// never created.
			return nil, fmt.Errorf("campaign %s is created, but publishing its tasks failed: %w; the coordinator tries again at each reconcile "+
				"(msjfarm status %s says how it goes, msjfarm cancel %s gives it up)", c.id, r.err, c.id, c.id)
		}
		if r.err != nil {
			return nil, r.err
		}
	case <-budget:
		answered.Store(true)
		pr := &c.progress
		r = result{int(pr.published.Load()), int(pr.queued.Load()), int(pr.existing.Load()), nil}
		pending = int(pr.remaining.Load())
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	if pending < 0 {
		// Still generating the task list or reading the stream and
		// storage: every task not known to be finished may be
		// published.
		pending = c.st.Total
		if c.done != nil {
			pending -= c.done.len() + len(c.failed)
		}
	}
	co.o.Logf("coordinator: campaign %s (%s): %d tasks, %d with a result (%d reused from other campaigns), %d published, %d already queued, %d being published",
		c.id, c.st.Name, c.st.Total, r.existing, c.reused, r.published, r.queued, pending)
	return &protocol.SubmitReply{Campaign: c.id, Name: c.st.Name, Tasks: c.st.Total, Points: c.st.Points,
		Published: r.published, Queued: r.queued, AlreadyDone: r.existing, Reused: c.reused, Publishing: pending,
		Warnings: camp.Warnings, Verify: c.st.Verify}, nil
}

// putState writes c's state to the campaigns bucket: counters and the
// spec's storage key, never the spec itself (its size is the sweep's).
func (co *Coordinator) putState(ctx context.Context, c *campaign) error {
	co.mu.Lock()
	st := c.st
	if st.SpecKey != "" {
		st.Spec = nil
	}
	data, err := json.Marshal(st)
	co.mu.Unlock()
	if err != nil {
		return err
	}
	_, err = co.h.Campaigns.Put(ctx, c.id, data)
	return err
}

// reconcile brings c's in-memory state in line with storage and the
// stream, and (publish) publishes the tasks that have neither a result nor
// a message, in named steps: queuedTasks, storedTasks, classify, toRequeue
// (the one place that decides what runs again) and requeue. The stream is
// read before storage: a task acked in between has its result written
// before its ack, so it is seen as done.
func (co *Coordinator) reconcile(ctx context.Context, c *campaign, publish bool) (published, queued, existing int, err error) {
	c.recMu.Lock()
	defer c.recMu.Unlock()
	return co.reconcileLocked(ctx, c, publish)
}

// listAndPublish is a submission's reconcile: it gives c its task list
// if it has none yet, writes the manifest and publishes. The caller holds
// c.recMu.
func (co *Coordinator) listAndPublish(ctx context.Context, c *campaign, camp *sweep.Campaign) (published, queued, existing int, err error) {
	if err := co.loadTaskList(c, camp); err != nil {
		return 0, 0, 0, err
	}
	if _, err := co.writeManifest(ctx, c, nil); err != nil {
		return 0, 0, 0, err
	}
	return co.reconcileLocked(ctx, c, true)
}

// reconcileLocked is reconcile; the caller holds c.recMu.
func (co *Coordinator) reconcileLocked(ctx context.Context, c *campaign, publish bool) (published, queued, existing int, err error) {
	defer func() { co.noteReconcile(ctx, c, err) }()
	co.mu.Lock()
	listed := c.tl != nil
	co.mu.Unlock()
	if !listed {
		return 0, 0, 0, nil // a submission is generating its list, then reconciles
	}
	inStream, err := co.queuedTasks(ctx, c)
	if err != nil {
		return 0, 0, 0, err
	}
	stored, err := co.storedTasks(ctx, c)
	if err != nil {
		return 0, 0, 0, err
	}
	co.classify(ctx, c, stored, inStream)
	missing, queued, existing := co.toRequeue(c, stored, inStream)
	c.progress.start(queued, existing, missing.n)
	published, reused, err := co.requeue(ctx, c, missing, publish)
	co.mu.Lock()
	prec := c.prec != nil
	co.mu.Unlock()
	if prec && reused > 0 {
		// Results taken from the store are not reported by a worker,
		// whose report is what judges a precision point: judge now (grow
		// takes c.recMu, held here by the caller), not at the next
		// periodic reconcile.
		go co.grow(context.WithoutCancel(ctx), c, true)
	}
	co.maybeFinalize(ctx, c)
	return published, queued, existing + reused, err
}

// noteReconcile keeps the failures in a row of c's reconciles for the
// status (campaign.recErr); a reconcile cut short by its context (the
// coordinator stopping, a submission's client gone) is not one.
func (co *Coordinator) noteReconcile(ctx context.Context, c *campaign, err error) {
	co.mu.Lock()
	defer co.mu.Unlock()
	switch {
	case err == nil:
		c.recErr, c.recFails = nil, 0
	case ctx.Err() == nil:
		c.recErr, c.recFails = err, c.recFails+1
	}
}

// ReconcileError is the failures in a row of campaign id's reconciles and
// the last one's error (0, nil: the last one succeeded), for a caller
// that owns the farm and would rather stop than wait for ever (local.Run:
// `msjfarm run` whose embedded NATS server's store is full).
func (co *Coordinator) ReconcileError(id string) (int, error) {
	co.mu.Lock()
	defer co.mu.Unlock()
	if c := co.camps[id]; c != nil {
		return c.recFails, c.recErr
	}
	return 0, nil
}

// classify records the stored results c does not know yet as done or
// failed; in precision mode it extends the points by the stored
// replications and judges the finished points, until nothing changes
// (this is how a resumed campaign recovers its added replications).
func (co *Coordinator) classify(ctx context.Context, c *campaign, stored, inStream *taskSet) {
	for {
		co.classifyOnce(ctx, c, stored)
		if c.prec == nil {
			return
		}
		if co.extendFromStorage(c, stored, inStream) == 0 && len(co.decide(ctx, c, true)) == 0 {
			return
		}
	}
}

// classifyOnce reads the records of the stored results c has not
// classified, a window at a time. A result moved aside (not a record of
// its task) leaves stored: its task runs again; an unreadable one that
// exists counts as done (it is left for the next finalisation to judge).
func (co *Coordinator) classifyOnce(ctx context.Context, c *campaign, stored *taskSet) {
	var unknown []string
	co.mu.Lock()
	stored.each(func(tid string) {
		if c.tl.Has(tid) && !c.done.has(tid) && c.failed[tid] == "" {
			unknown = append(unknown, tid)
		}
	})
	co.mu.Unlock()
	for len(unknown) > 0 {
		n := min(len(unknown), submitWindow)
		co.classifyWindow(ctx, c, stored, unknown[:n])
		unknown = unknown[n:]
	}
}

func (co *Coordinator) classifyWindow(ctx context.Context, c *campaign, stored *taskSet, tids []string) {
	recs := co.readRecords(ctx, c.id, tids)
	for _, tid := range tids {
		if recs[tid] != nil {
			continue
		}
		if _, err := co.o.Store.Stat(ctx, storage.ResultKey(c.id, tid)); errors.Is(err, storage.ErrNotFound) {
			stored.del(tid) // moved aside: runs again
		}
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	for _, tid := range tids {
		r := recs[tid]
		switch {
		case r == nil && !stored.has(tid): // moved aside: runs again
		case r == nil: // unreadable: leave it, it exists
			c.done.add(tid)
		case r.Failed():
			c.failed[tid] = r.Error
		default:
			c.done.add(tid)
		}
		delete(c.running, tid)
	}
}

// toRequeue is the one place that decides which of c's tasks are
// published again: those with neither a result in storage nor a message
// in the stream — whatever the task-state KV says, a task without a
// record has to run, so it is forgotten as done or failed here. It
// returns them by position, a bit each (requeue generates the tasks a
// window at a time), and counts the queued tasks and those with a result.
func (co *Coordinator) toRequeue(c *campaign, stored, inStream *taskSet) (missing *positions, queued, existing int) {
	co.mu.Lock()
	defer co.mu.Unlock()
	tl := c.tl
	missing = newPositions(tl.Len())
	for i := range tl.Len() {
		// A compact list's sets go by position: its ids (a string
		// allocated each) are not generated for 10^7 tasks.
		var tid string
		if tl.ids == nil || len(c.failed) > 0 {
			tid = tl.ID(i)
		}
		inStore := stored.hasAt(i, tid)
		if inStore {
			existing++
		}
		if inStream.hasAt(i, tid) {
			queued++
			continue
		}
		if !inStore {
			c.done.delAt(i, tid)
			delete(c.failed, tid)
			missing.add(i)
		}
	}
	return missing, queued, existing
}

// requeue looks the missing tasks (positions) up in the content-addressed
// store (a result another campaign computed is referenced, not run again)
// and (publish) publishes the others in a new epoch, a window at a time,
// so that memory stays bounded by the window whatever the campaign's size.
// reused counts the tasks found stored.
func (co *Coordinator) requeue(ctx context.Context, c *campaign, missing *positions, publish bool) (published, reused int, err error) {
	co.mu.Lock()
	running := c.st.State == protocol.CampaignRunning
	co.mu.Unlock()
	if !running || missing.n == 0 {
		return 0, 0, nil
	}
	// Only a campaign finalised before has checksums to amend (and
	// collecting the keys of 10^7 tasks published for the first time
	// would hold a gigabyte).
	var forget checksumForget
	if _, err := co.o.Store.Stat(ctx, storage.ChecksumsKey(c.id)); err == nil {
		forget.active = true
	} else if !errors.Is(err, storage.ErrNotFound) {
		return 0, 0, err
	}
	defer func() {
		if ferr := co.forgetChecksums(ctx, c, &forget); ferr != nil && err == nil {
			err = ferr
		}
	}()
	epoch := 0
	window := make([]int32, 0, min(missing.n, submitWindow))
	for from := 0; ; {
		window, from = missing.next(window[:0], from, submitWindow)
		n := len(window)
		if n == 0 {
			break
		}
		p, r, err := co.requeueWindow(ctx, c, window, publish, &epoch, &forget)
		published, reused = published+p, reused+r
		c.progress.window(n, p, r)
		if err != nil {
			return published, reused, err
		}
	}
	return published, reused, nil
}

// requeueWindow generates the tasks at positions idx, references those
// with a stored result and publishes the others; *epoch is the epoch of
// this reconcile's messages (0: not started yet).
func (co *Coordinator) requeueWindow(ctx context.Context, c *campaign, idx []int32, publish bool, epoch *int, forget *checksumForget) (published, reused int, err error) {
	tasks := make([]sweep.Task, len(idx))
	co.mu.Lock() // a precision campaign's list grows under it
	for j, i := range idx {
		tasks[j] = c.tl.At(int(i))
	}
	co.mu.Unlock()
	found, err := co.reuse(ctx, c, tasks)
	if err != nil {
		return 0, 0, err
	}
	rest := tasks[:0]
	co.mu.Lock()
	for _, t := range tasks {
		if found[t.ID] {
			reused++
			c.done.add(t.ID)
			delete(c.running, t.ID)
		} else {
			rest = append(rest, t)
		}
	}
	co.mu.Unlock()
	if !publish || len(rest) == 0 {
		return 0, reused, nil
	}
	if *epoch == 0 {
		if *epoch, err = co.nextEpoch(ctx, c); err != nil {
			return 0, reused, err
		}
	}
	if forget.active {
		co.mu.Lock()
		for _, t := range rest {
			forget.keys = append(forget.keys, storage.ResultKey(c.id, t.ID), storage.StoredResultKey(co.expectedKeyLocked(c, t)))
		}
		co.mu.Unlock()
	}
	if err := co.publish(ctx, c.id, *epoch, rest); err != nil {
		return 0, reused, err
	}
	return len(rest), reused, nil
}

// nextEpoch starts a new epoch of c's messages (their dedup ids) and
// stores it.
func (co *Coordinator) nextEpoch(ctx context.Context, c *campaign) (int, error) {
	co.mu.Lock()
	c.st.Epoch++
	epoch := c.st.Epoch
	co.mu.Unlock()
	return epoch, co.putState(ctx, c)
}

// submitWindow is how many tasks reconcile generates, looks up and
// publishes at a time.
var submitWindow = 4096

// publish sends task messages asynchronously, in windows of publishWindow
// unacknowledged messages, and waits for every ack.
func (co *Coordinator) publish(ctx context.Context, id string, epoch int, tasks []sweep.Task) error {
	for len(tasks) > 0 {
		n := min(len(tasks), publishWindow)
		if err := co.publishBatch(ctx, id, epoch, tasks[:n]); err != nil {
			return err
		}
		tasks = tasks[n:]
	}
	return nil
}

const publishWindow = 1000

// taskMessage is the message that publishes task t of campaign id.
func (co *Coordinator) taskMessage(id string, t sweep.Task) ([]byte, error) {
	return json.Marshal(protocol.TaskMsg{Campaign: id, Task: t, ResultKey: co.expectedKey(id, t), Store: co.storeID})
}

func (co *Coordinator) publishBatch(ctx context.Context, id string, epoch int, tasks []sweep.Task) error {
	futures := make([]jetstream.PubAckFuture, 0, len(tasks))
	for _, t := range tasks {
		data, err := co.taskMessage(id, t)
		if err != nil {
			return err
		}
		f, err := co.js.PublishAsync(protocol.TaskSubject(id, t.ID), data,
			jetstream.WithMsgID(protocol.MsgID(id, t.ID, epoch)))
		if err != nil {
			return fmt.Errorf("publishing task %s: %w", t.ID, err)
		}
		futures = append(futures, f)
	}
	select {
	case <-co.js.PublishAsyncComplete():
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(2 * time.Minute):
		return errors.New("publishing: no acks after 2 minutes")
	}
	for _, f := range futures {
		select {
		case err := <-f.Err():
			return fmt.Errorf("publishing %s: %w", f.Msg().Subject, err)
		default:
		}
	}
	return nil
}

// RejectedKey is where a stored result that is not its task's result
// (record.Read's *IntegrityError: not a record, or its task does not hash
// to the id it is stored under) is moved, for inspection, before its task
// is run again.
func RejectedKey(campaign, task string) string {
	return storage.CampaignPrefix(campaign) + "rejected/" + task + ".json"
}

// readRecords reads result records (record.ReadMany); unreadable ones are
// logged and absent from the map. A stored object that is not a record of
// its task is never counted: it is moved to RejectedKey (and the
// campaign's reference to it removed), so that reconcile finds the task
// without a result and publishes it again.
func (co *Coordinator) readRecords(ctx context.Context, id string, tids []string) map[string]*record.Record {
	return record.ReadMany(ctx, co.o.Store, id, tids, func(tid string, err error) {
		ie, ok := errors.AsType[*record.IntegrityError](err)
		if !ok {
			co.o.Logf("coordinator: reading result %s: %v", tid, err)
			return
		}
		co.o.Logf("coordinator: campaign %s: %v: moved to %s, the task will run again", id, err, RejectedKey(id, tid))
		co.moveAsideKey(ctx, id, tid, ie.Key)
	})
}

// moveAside moves the result object of task tid of campaign id (the stored
// result its entry refers to, or the entry itself) to RejectedKey and
// removes the campaign's entry, so that the task runs again.
func (co *Coordinator) moveAside(ctx context.Context, id, tid string) {
	_, objs, err := record.ReadObjects(ctx, co.o.Store, id, tid)
	if len(objs) == 0 {
		co.o.Logf("coordinator: moving result %s aside: %v", tid, err)
		return
	}
	co.moveAsideKey(ctx, id, tid, objs[len(objs)-1].Key)
}

func (co *Coordinator) moveAsideKey(ctx context.Context, id, tid, key string) {
	data, gerr := co.o.Store.Get(ctx, key)
	if ck, shared := storage.StoredResultContentKey(key); gerr == nil && shared && otherTasksResult(data, ck, tid) {
		// A sound stored result of another task, shared by the
		// campaigns that reference it: the fault is this campaign's
		// reference (forged, by a party that may publish task messages
		// with another task's result_key), so the reference is what
		// goes aside. Moving the object removed another campaign's
		// result, and its archive export failed "not found".
		key = storage.ResultKey(id, tid)
		data, gerr = co.o.Store.Get(ctx, key)
	}
	if gerr == nil {
		gerr = co.o.Store.Put(ctx, RejectedKey(id, tid), data)
	}
	if gerr != nil {
		co.o.Logf("coordinator: moving result %s aside: %v", tid, gerr)
		return
	}
	for _, k := range []string{key, storage.ResultKey(id, tid)} {
		if derr := co.o.Store.Delete(ctx, k); derr != nil && !errors.Is(derr, storage.ErrNotFound) {
			co.o.Logf("coordinator: moving result %s aside: %v", tid, derr)
		}
	}
}

// otherTasksResult reports whether data, stored under content key ck, is
// a sound result of another task than tid: a record whose task content
// hashes to its id, that id not tid, and whose key from that id and the
// code it names (record.Key) is ck, as record.Store writes it. A result of
// tid itself (outvoted by a verification, modified since the last
// finalisation) is the object at fault, and moved.
func otherTasksResult(data []byte, ck, tid string) bool {
	var r record.Record
	if json.Unmarshal(data, &r) != nil || r.Task.ID == "" || r.Task.ID == tid || sweep.TaskID(r.Task) != r.Task.ID {
		return false
	}
	im, ok := record.ImplOf(r.Provenance)
	return ok && record.Key(r.Task.ID, im) == ck
}

// Status reports a campaign's progress.
func (co *Coordinator) Status(ctx context.Context, id string) (*protocol.Status, error) {
	co.mu.Lock()
	c := co.camps[id]
	if c != nil {
		s := co.statusLocked(c)
		if s.State == protocol.CampaignRunning {
			s.Paused = co.pausedLocked()
		}
		co.mu.Unlock()
		co.storedVerifyStatus(ctx, &s)
		return &s, nil
	}
	unknown, isUnknown := co.unknown[id]
	bad, isBad := co.bad[id]
	var stray *protocol.Status
	if sc := co.strays.camps[id]; sc != nil {
		s := co.strayStatusLocked(id, sc)
		stray = &s
	}
	co.mu.Unlock()
	if isBad {
		s := badStatus(bad)
		return &s, nil
	}
	e, err := co.h.Campaigns.Get(ctx, id)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) && isUnknown:
		s := unknownStatus(unknown)
		return &s, nil
	case errors.Is(err, jetstream.ErrKeyNotFound) && stray != nil:
		return stray, nil
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return nil, fmt.Errorf("%w %q", ErrUnknownCampaign, id)
	case err != nil:
		return nil, err
	}
	// Written since the coordinator started: checked, never trusted, and
	// compared with its manifest as at start (one read, for an entry no
	// submission here wrote).
	st, err := readState(id, e.Value())
	if err == nil {
		err = co.distrustLater(ctx, &st)
	}
	if err != nil {
		s := badStatus(badState{id: id, why: err.Error(), at: e.Created()})
		return &s, nil
	}
	s := co.elsewhereStatus(st)
	return &s, nil
}

// elsewhereStatus is the status of a campaign this coordinator has not
// loaded, from its state.
func (co *Coordinator) elsewhereStatus(st protocol.CampaignState) protocol.Status {
	return co.statusLocked(&campaign{id: st.ID, st: st})
}

// statusLocked is c's status as the API gives it (co.mu held, or c not
// shared): one whose entry names another store says so (otherStoreNote).
func (co *Coordinator) statusLocked(c *campaign) protocol.Status {
	s := c.status()
	if s.Elsewhere == "" {
		s.Elsewhere = co.otherStoreNote(&c.st)
	}
	return s
}

// otherStoreNote is what a campaign whose entry names another store than
// this coordinator's says (Status.Elsewhere; "" for this store's, or an
// entry older than the store field). A running one is not resumed here:
// before, it read "running" with nothing running, and `msjfarm status`
// without an id did not list it at all. A finished or cancelled one is
// listed with the counts, name and times of its entry, which are not
// checked against its manifest (crossCheck: the manifest is in the
// other store), and so are anyone's who holds the farm's NATS
// credentials: a forged entry naming a made-up store showed any numbers
// as if trusted.
func (co *Coordinator) otherStoreNote(st *protocol.CampaignState) string {
	if st.Store == "" || st.Store == co.storeID {
		return ""
	}
	if st.State == protocol.CampaignRunning {
		return fmt.Sprintf("runs on store %s, not this coordinator's store %s (%s): not resumed here; submit it again to run it on this store, or run the coordinator on its store", st.Store, co.storeID, co.o.Store.URL())
	}
	return fmt.Sprintf("belongs to store %s, not this coordinator's store %s (%s): not checked against its manifest, which is in that store; its counts, name and times are what its entry in NATS's %s bucket says, which anyone holding the farm's NATS credentials may write",
		st.Store, co.storeID, co.o.Store.URL(), protocol.CampaignBucket)
}

// List reports every campaign the coordinator knows.
func (co *Coordinator) List() []protocol.Status {
	co.mu.Lock()
	defer co.mu.Unlock()
	out := make([]protocol.Status, 0, len(co.camps)+len(co.elsewhere))
	paused := co.pausedLocked()
	for _, c := range co.camps {
		s := co.statusLocked(c)
		s.Errors = nil
		if s.State == protocol.CampaignRunning {
			s.Paused = paused
		}
		out = append(out, s)
	}
	for id, st := range co.elsewhere {
		if co.camps[id] == nil { // else submitted here since
			out = append(out, co.elsewhereStatus(st))
		}
	}
	for id, st := range co.unknown {
		if co.camps[id] == nil {
			out = append(out, unknownStatus(st))
		}
	}
	out = append(out, co.badListLocked()...)
	for id, sc := range co.strays.camps {
		if co.camps[id] == nil && co.elsewhere[id].ID == "" && co.unknown[id].ID == "" && co.bad[id].id == "" {
			out = append(out, co.strayStatusLocked(id, sc))
		}
	}
	sortStatus(out)
	return out
}

// Wait blocks until the campaign is done or cancelled (or ctx ends) and
// returns its final status.
func (co *Coordinator) Wait(ctx context.Context, id string) (*protocol.Status, error) {
	co.mu.Lock()
	c := co.camps[id]
	co.mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownCampaign, id)
	}
	co.mu.Lock()
	fin := c.finished
	co.mu.Unlock()
	select {
	case <-fin:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return co.Status(ctx, id)
}

// Cancel stops a campaign: queued tasks are purged from the stream, running
// ones are stopped by their workers (they poll the campaign state), and
// the results so far stay in storage. Submitting it again resumes it.
func (co *Coordinator) Cancel(ctx context.Context, id string) (*protocol.Status, error) {
	co.mu.Lock()
	c := co.camps[id]
	if c == nil {
		co.mu.Unlock()
		return nil, fmt.Errorf("%w %q", ErrUnknownCampaign, id)
	}
	// The manifest of a finished campaign loaded from its entry (no task
	// list: no counts) is left as its end wrote it: rewritten, it lost
	// its counts and task list hash, and its done entry then disagreed
	// with it at the next start (crossCheck).
	rewrite := c.st.State == protocol.CampaignRunning || c.tl != nil
	if c.st.State == protocol.CampaignRunning {
		c.st.State = protocol.CampaignCancelled
		c.st.Finished = time.Now().UTC()
		// The counts of its task list as recorded now, into the entry
		// and the manifest alike (writeManifest takes a finished
		// campaign's from its state): the entry kept the zeros of its
		// submission, which status showed after a restart, and the
		// manifest the counts at its own writing. Without a task list
		// (a submission still generating it) nothing is recorded yet.
		if c.tl != nil {
			c.st.Done, c.st.Failed = c.done.len(), len(c.failed)
		}
	}
	co.mu.Unlock()
	if err := co.putState(ctx, c); err != nil {
		return nil, err
	}
	if err := co.h.Tasks.Purge(ctx, jetstream.WithPurgeSubject(protocol.CampaignFilter(id))); err != nil {
		return nil, fmt.Errorf("purging tasks: %w", err)
	}
	if rewrite {
		if _, err := co.writeManifest(ctx, c, nil); err != nil {
			co.o.Logf("coordinator: manifest of %s: %v", id, err)
		}
	}
	co.mu.Lock()
	c.close()
	s := co.statusLocked(c)
	co.mu.Unlock()
	return &s, nil
}

// advisory handles a max-deliveries advisory: the task's message was
// delivered MaxDeliver times without an ack (workers lost or hung, or a
// worker died on the last attempt). Its failure is recorded with the last
// error a worker reported and the message is removed from the stream.
func (co *Coordinator) advisory(ctx context.Context, m jetstream.Msg) {
	var adv struct {
		Stream     string `json:"stream"`
		Consumer   string `json:"consumer"`
		StreamSeq  uint64 `json:"stream_seq"`
		Deliveries uint64 `json:"deliveries"`
	}
	if err := json.Unmarshal(m.Data(), &adv); err != nil || adv.StreamSeq == 0 {
		_ = m.Term()
		return
	}
	raw, err := co.h.Tasks.GetMsg(ctx, adv.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		_ = m.Ack() // acked, terminated or purged meanwhile
		return
	}
	if err != nil {
		co.o.Logf("coordinator: advisory for seq %d: %v", adv.StreamSeq, err)
		_ = m.NakWithDelay(time.Second)
		return
	}
	// Only a message whose task is what its id says is recorded as that
	// task's failure: a forged one must not fill the task's result key.
	tm, err := protocol.DecodeTaskMsg(raw.Subject, raw.Data)
	if err != nil {
		co.o.Logf("coordinator: max-deliveries advisory for message %d: %v; removed", adv.StreamSeq, err)
		_ = co.h.Tasks.DeleteMsg(ctx, adv.StreamSeq)
		_ = m.Ack()
		return
	}
	id, tid := tm.Campaign, tm.Task.ID
	key := storage.ResultKey(id, tid)
	if _, err := co.o.Store.Stat(ctx, key); err != nil {
		last := "none reported (the worker was killed or hung before it could report)"
		if e, err := co.h.TaskStates.Get(ctx, protocol.TaskKey(id, tid)); err == nil {
			var st protocol.TaskState
			if json.Unmarshal(e.Value(), &st) == nil && st.Error != "" {
				last = st.Error
			}
		}
		errText := fmt.Sprintf("not acknowledged after %d deliveries (MaxDeliver); last error: %s", adv.Deliveries, last)
		rec := record.Record{Task: tm.Task, Error: errText, Provenance: record.Provenance{
			RecordedBy: "coordinator", Host: co.host, Deliveries: int(adv.Deliveries)}}
		data, _ := json.Marshal(&rec)
		if _, err := co.o.Store.PutIfAbsent(ctx, key, data); err != nil {
			co.o.Logf("coordinator: recording failure of %s: %v", tid, err)
			_ = m.NakWithDelay(time.Second)
			return
		}
		st, _ := json.Marshal(protocol.TaskState{State: protocol.StateFailed, Worker: "coordinator", Error: errText, Updated: time.Now().UTC()})
		if _, err := co.h.TaskStates.Put(ctx, protocol.TaskKey(id, tid), st); err != nil {
			co.o.Logf("coordinator: task state of %s: %v", tid, err)
		}
		co.o.Logf("coordinator: task %s of %s failed: %s", tid, id, errText)
	}
	if err := co.h.Tasks.DeleteMsg(ctx, adv.StreamSeq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		co.o.Logf("coordinator: removing message %d: %v", adv.StreamSeq, err)
	}
	_ = m.Ack()
}

func respond(m *nats.Msg, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	_ = m.Respond(data)
}

func apiCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Minute)
}

func (co *Coordinator) apiSubmit(m *nats.Msg) {
	var req protocol.SubmitRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		respond(m, protocol.SubmitReply{Error: "bad request: " + err.Error()})
		return
	}
	ctx, cancel := apiCtx()
	defer cancel()
	r, err := co.Submit(ctx, req)
	if err != nil {
		respond(m, protocol.SubmitReply{Error: err.Error()})
		return
	}
	respond(m, r)
}

func (co *Coordinator) apiStatus(m *nats.Msg) { co.apiCampaign(m, co.Status) }

func (co *Coordinator) apiCancel(m *nats.Msg) { co.apiCampaign(m, co.Cancel) }

// apiCampaign answers a request naming a campaign with op's status.
func (co *Coordinator) apiCampaign(m *nats.Msg, op func(context.Context, string) (*protocol.Status, error)) {
	var req protocol.StatusRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		respond(m, protocol.Status{Error: "bad request: " + err.Error()})
		return
	}
	ctx, cancel := apiCtx()
	defer cancel()
	s, err := op(ctx, req.Campaign)
	if err != nil {
		respond(m, protocol.Status{Campaign: req.Campaign, Error: err.Error()})
		return
	}
	respond(m, s)
}

func (co *Coordinator) apiList(m *nats.Msg) {
	respond(m, protocol.ListReply{Campaigns: co.List()})
}

// checksumForget collects the result objects of the tasks a reconcile
// publishes again.
type checksumForget struct {
	active bool // the campaign has checksums
	keys   []string
}

// forgetChecksums removes from the campaign's checksums (of an earlier
// finalisation) the objects of tasks published again: their results were
// lost and are computed anew, with other bytes (a result's provenance
// differs from run to run), which the next finalisation must not take
// for a modification. The manifest is rewritten with the new hash.
func (co *Coordinator) forgetChecksums(ctx context.Context, c *campaign, f *checksumForget) error {
	if len(f.keys) == 0 {
		return nil
	}
	data, err := co.o.Store.Get(ctx, storage.ChecksumsKey(c.id))
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	drop := make(map[string]bool, len(f.keys))
	for _, k := range f.keys {
		drop[k] = true
	}
	var out []byte
	changed := false
	for line := range bytes.Lines(data) {
		if _, key, ok := bytes.Cut(bytes.TrimSuffix(line, []byte("\n")), []byte("  ")); ok && drop[string(key)] {
			changed = true
			continue
		}
		out = append(out, line...)
	}
	if !changed {
		return nil
	}
	if err := co.o.Store.Put(ctx, storage.ChecksumsKey(c.id), out); err != nil {
		return err
	}
	co.mu.Lock()
	c.checksums = archive.SHA256(out)
	co.mu.Unlock()
	_, err = co.writeManifest(ctx, c, nil)
	return err
}

// reconcileProgress is what the running reconcile of a campaign has done
// so far, read by a submission that answers before the publication ends.
type reconcileProgress struct {
	queued, existing, published, remaining atomic.Int64
}

// begin marks the tasks to publish as not counted yet (remaining -1).
func (p *reconcileProgress) begin() {
	p.queued.Store(0)
	p.existing.Store(0)
	p.published.Store(0)
	p.remaining.Store(-1)
}

func (p *reconcileProgress) start(queued, existing, missing int) {
	p.queued.Store(int64(queued))
	p.existing.Store(int64(existing))
	p.published.Store(0)
	p.remaining.Store(int64(missing))
}

// window counts a window of n missing tasks: published of them
// published, reused found stored.
func (p *reconcileProgress) window(n, published, reused int) {
	p.published.Add(int64(published))
	p.existing.Add(int64(reused))
	p.remaining.Add(-int64(n))
}

// backgroundCtx is the context of work that outlives a request: the
// coordinator's own while it runs, else ctx without its cancellation
// (a coordinator used as a library, without Run).
func (co *Coordinator) backgroundCtx(ctx context.Context) context.Context {
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.runCtx != nil {
		return co.runCtx
	}
	return context.WithoutCancel(ctx)
}

// positions is a set of task positions, a bit each: the tasks a
// reconcile publishes, 1.25 MB for 10^7 (as int32s they were 40 MB).
type positions struct {
	bits []uint64
	n    int
}

func newPositions(n int) *positions { return &positions{bits: make([]uint64, (n+63)/64)} }

func (p *positions) add(i int) {
	p.bits[i/64] |= 1 << (i % 64)
	p.n++
}

// next appends to buf the positions from from on, in order, up to max of
// them, and returns buf and where to go on from.
func (p *positions) next(buf []int32, from, max int) ([]int32, int) {
	for i := from; i < len(p.bits)*64; i++ {
		if len(buf) == max {
			return buf, i
		}
		w := p.bits[i/64]
		if w == 0 {
			i |= 63 // skip the empty word
			continue
		}
		if w&(1<<(i%64)) != 0 {
			buf = append(buf, int32(i))
		}
	}
	return buf, len(p.bits) * 64
}
