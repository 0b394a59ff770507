// Package coordinator runs campaigns on the farm: it expands a submitted
// sweep into tasks, publishes them to the JetStream work queue (layout in
// package internal/protocol), tracks their state through the msjfarm_tasks KV bucket,
// records tasks that exhausted their deliveries as failed, and when every
// task has a result writes the campaign's summary.csv (package
// results/aggregate), manifest.json (package results/archive) and the
// rendered report (package results/report: index.html, plots,
// summary.csv/json, manifest.json under campaigns/<id>/report/) to storage.
// A campaign reports state "done" only once all of these are written. It
// answers submit, status, cancel and list requests over NATS request/reply.
//
// A sweep with a precision block (sweep.Precision) runs in sequential mode:
// the coordinator adds replications to each point until the confidence
// interval of the chosen metric is narrow enough or a cap is reached, and
// writes the outcome per point to campaigns/<id>/precision.csv and
// manifest.json (see precision.go).
//
// Package results/archive reads a campaign back from storage alone (spec,
// manifest, records) for `msjfarm report` and `msjfarm reproduce`.
//
// Restartability: everything the coordinator knows is either in storage
// (results, spec, manifest) or in JetStream (campaign states, task states,
// queued messages, captured advisories). A restarted coordinator reloads
// every running campaign from the msjfarm_campaigns bucket and re-publishes
// exactly the tasks that have no result in storage and no message in the
// stream; the workers additionally skip any task whose result exists, so a
// completed task is never run again.
package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/termtext"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// Options configures a coordinator.
type Options struct {
	Conn  *nats.Conn
	Store storage.Store
	// FindUnknown lists, at start, the campaigns the store holds as
	// running that NATS does not know (findUnknown): a farm's
	// coordinator does; msjfarm run's, whose server is its own, need not.
	FindUnknown bool
	// Catalog validates sweeps (default: the built-in catalogue,
	// registry.Builtin). A campaign's plugin pins (SubmitRequest.Pins, or
	// its plugins.json when a restarted coordinator expands it again) add
	// their policies with the schemas stored beside them, so a third-party
	// policy is validated without executing its binary.
	Catalog sweep.Catalog
	// Layout is the JetStream layout (AckWait, MaxDeliver of the workers'
	// consumer).
	Layout protocol.Layout
	// Reconcile is how often running campaigns are checked against storage
	// and the stream (default 30 s); lost messages are re-published.
	Reconcile time.Duration
	// Logf logs (default: discard).
	Logf func(format string, args ...any)
	// LeaseTTL is the coordinator lease's time to live (lease.go; 0:
	// DefaultLeaseTTL): a coordinator standing by takes over at most this
	// long after the holder was killed.
	LeaseTTL time.Duration
	// NoStandby makes Run return ErrLeaseHeld, instead of standing by,
	// when another coordinator holds the lease.
	NoStandby bool
	// VerifyPoll, VerifyWait and VerifyRepublish pace spot verification
	// (verify.go; 0: DefaultVerifyPoll, DefaultVerifyWait,
	// DefaultVerifyRepublish): how often it looks for new records, how
	// long after a campaign's last task it waits for another worker to
	// run a sampled task, and after how long a request whose message is
	// gone without a record is published again.
	VerifyPoll, VerifyWait, VerifyRepublish time.Duration
}

// Coordinator is a running coordinator.
type Coordinator struct {
	o    Options
	nc   *nats.Conn
	js   jetstream.JetStream
	h    *protocol.Handles
	host string

	mu    sync.Mutex
	camps map[string]*campaign
	// elsewhere are the running campaigns of another store, not resumed
	// (loadCampaigns), by id: Status and List say so (elsewhereStatus).
	elsewhere map[string]protocol.CampaignState
	// unknown are the campaigns the store holds as running that NATS
	// does not know (findUnknown), by id: Status and List say so.
	unknown map[string]protocol.CampaignState
	// bad are the campaigns whose entry in the campaigns bucket is not
	// usable and that the store could not rebuild (recoverStates), with
	// why, by id (at most maxBadListed; badMore counts the rest): Status
	// and List say so.
	bad     map[string]badState
	badMore int
	// strays are the task messages workers refused that name a campaign
	// this coordinator does not know (refused.go).
	strays strayRefusals
	// malformed are the task messages that do not decode, as workers
	// recorded them in the task-state bucket (malformed.go).
	malformed malformedLog
	// paused are the workers whose last heartbeats said their store is
	// unavailable (heartbeat), by name.
	paused map[string]pausedWorker
	// watchReady is closed once the task-state watcher has replayed the
	// bucket, so that classification of existing results is known.
	watchReady chan struct{}
	ready      chan struct{}
	// reportGen counts the report publications started per campaign
	// (guarded by mu), so that a retry of a failed one stops once a newer
	// one started (finalize.go).
	reportGen map[string]int
	// reportErr is each campaign's last report publication error (nil
	// once one succeeds; guarded by mu): ReportError.
	reportErr map[string]error
	// runCtx is Run's context while it runs (guarded by mu): work that
	// outlives an API request (a publication) runs on it.
	runCtx context.Context
	// storeID is the store's identity (storage.ID), read by Run before
	// it takes the lease and fixed after: every task and verification
	// message carries it, so that a worker on another store refuses to
	// run for nothing, and the lease names it, so that a standby on
	// another store refuses to take over (storeid.go).
	storeID string
	// storeIDSaid is what keepStoreID last found wrong with the store-id
	// object ("" nothing; guarded by mu), so that it is warned of once.
	storeIDSaid string
}

type campaign struct {
	id       string     // immutable
	recMu    sync.Mutex // serialises reconcile
	st       protocol.CampaignState
	warnings []string
	// tl are the campaign's tasks (nil: not loaded, a finished campaign
	// known from its stored state).
	tl      *taskList
	done    *taskSet
	failed  map[string]string
	running map[string]string
	// attempts is the highest delivery attempt seen per redelivered task
	// (live.go).
	attempts map[string]int
	// finalizing is set while the summary is being written.
	finalizing bool
	// finalErr is the last finalisation's error and finalFails the
	// failures in a row (errIncomplete, a re-run of missing results,
	// not counted); both are cleared by one that succeeds. They are in
	// the status (Finalising), so that a campaign whose every task is
	// done but whose summary cannot be written (a full disk) says so, where
	// `msjfarm run` showed "4/4 done, ETA 0s" for ever.
	finalErr   error
	finalFails int
	// incomplete counts the finalisations in a row that found results
	// missing (errIncomplete), incompleteAt the last one: past
	// incompleteWarn, the next waits for the periodic reconcile
	// (maybeFinalize) and the status asks whether the workers store
	// where the coordinator reads.
	incomplete   int
	incompleteAt time.Time
	// rejected are the first task messages workers refused (content
	// not matching the task id), for the status, and rejectedN all of
	// them (apply).
	rejected  []string
	rejectedN int
	// malformed are the first of the task messages kept that do not
	// decode and whose subject names the campaign, malformedN all of
	// them (malformed.go: spreadMalformedLocked).
	malformed  []string
	malformedN int
	// recErr is the last reconcile's error and recFails the failures in
	// a row, cleared by one that succeeds (reconcileLocked). They are in
	// the status (Reconciling): a campaign whose tasks cannot be
	// published (the NATS server's JetStream store full, a subject its
	// user may not publish to) stayed "running" with nothing queued, and
	// only the coordinator's log said why.
	recErr   error
	recFails int
	// finalMu is held by a running finalisation (which can take tens of
	// seconds: the report is rendered) and by Submit while it resets the
	// campaign, so that the two never interleave.
	finalMu sync.Mutex
	// finished is closed when the campaign is done or cancelled.
	finished chan struct{}
	closed   bool
	// Precision mode (nil prec: fixed replications); see precision.go.
	prec    *sweep.Precision
	seed    uint64
	initial int
	pts     map[string]*pointState
	porder  []string
	// candidates are the points a finished task may have made ready
	// (next), judged by the next grow; undecided counts the points
	// without a status. Both spare a scan of every point at each
	// completion: at 16,000 points that scan, under co.mu, was 81 s of a
	// campaign's 227 s of CPU, and throughput fell to a third.
	candidates map[string]bool
	undecided  int
	// impl is the code each policy is expected to run with (the content
	// keys of its results); reused counts the results of other campaigns
	// this submission referenced.
	impl   map[string]record.Impl
	reused int
	// checksums is the sha256 of the checksums object of the last
	// finalisation (manifest checksums_sha256).
	checksums string
	// ver is the campaign's spot verification (nil: none; verify.go).
	ver *verifyState
	// progress is the running reconcile's (publishSubmitted).
	progress reconcileProgress
	// submitting counts the submissions in flight that have not started
	// their reconcile (beginSubmit); the periodic reconcile skips c.
	submitting int
}

func (c *campaign) status() protocol.Status {
	s := protocol.Status{Campaign: c.id, Name: c.st.Name, State: c.st.State, Total: c.st.Total,
		Created: c.st.Created, Finished: c.st.Finished}
	s.Rejected, s.RejectedTotal = append([]string(nil), c.rejected...), c.rejectedN
	s.Malformed, s.MalformedTotal = append([]string(nil), c.malformed...), c.malformedN
	if c.tl == nil { // not loaded: counts from the stored state
		s.Done, s.Failed = c.st.Done, c.st.Failed
		return s
	}
	s.Done, s.Failed, s.Running = c.done.len(), len(c.failed), len(c.running)
	if s.State == protocol.CampaignDone && !c.closed {
		// Finalisation is still writing the manifest and report: clients
		// that stop polling at "done" must find them in storage. It is
		// not finished either until they are written.
		s.State, s.Finished = protocol.CampaignRunning, time.Time{}
	}
	s.Queued = max(0, s.Total-s.Done-s.Failed-s.Running)
	if c.st.State != protocol.CampaignRunning {
		s.Queued = 0
	}
	if c.finalErr != nil && s.State == protocol.CampaignRunning {
		s.Finalising = fmt.Sprintf("finalising the campaign failed %s (tried again at each reconcile): %v", times(c.finalFails), c.finalErr)
	}
	if c.recErr != nil && s.State == protocol.CampaignRunning {
		n := times(c.recFails)
		if c.recFails > 1 {
			n += " in a row"
		}
		s.Reconciling = fmt.Sprintf("reading the campaign's results and task stream and publishing its missing tasks failed %s (tried again at each reconcile): %v", n, c.recErr)
	}
	if c.ver != nil {
		vs := c.ver.status()
		s.Verify = &vs
	}
	ids := make([]string, 0, len(c.failed))
	for id := range c.failed {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if len(s.Errors) == 10 {
			break
		}
		s.Errors = append(s.Errors, id+": "+c.failed[id])
	}
	return s
}

// times is "once", "twice" or "n times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

func (c *campaign) complete() bool {
	return c.tl != nil && c.done.len()+len(c.failed) >= c.tl.Len() && (c.prec == nil || c.decidedAll()) && c.verifySettled()
}

func (c *campaign) close() {
	if !c.closed {
		c.closed = true
		close(c.finished)
	}
}

// New creates or updates the JetStream layout and returns a coordinator;
// call Run to start it.
func New(ctx context.Context, o Options) (*Coordinator, error) {
	if o.Conn == nil || o.Store == nil {
		return nil, errors.New("coordinator: Conn and Store are required")
	}
	if o.Catalog == nil {
		o.Catalog = registry.Builtin()
	}
	if o.Reconcile <= 0 {
		o.Reconcile = 30 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	js, err := jetstream.New(o.Conn)
	if err != nil {
		return nil, err
	}
	h, err := protocol.Setup(ctx, js, o.Layout)
	if err != nil {
		return nil, fmt.Errorf("coordinator: JetStream layout: %w", err)
	}
	if err := storage.CheckWritable(ctx, o.Store); err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	// Campaigns written before the content-addressed store (full records
	// under the campaign) are converted once, so that their results are
	// reused by later campaigns; nothing is lost or re-run.
	ms, err := record.Migrate(ctx, o.Store)
	if err != nil {
		return nil, fmt.Errorf("coordinator: converting stored results: %w", err)
	}
	if ms.Campaigns > 0 {
		o.Logf("coordinator: %d campaigns converted to the content-addressed store (%d results filed, %d entries kept in place)",
			ms.Campaigns, ms.Moved, ms.Kept)
	}
	host, _ := os.Hostname()
	return &Coordinator{o: o, nc: o.Conn, js: js, h: h, host: host, camps: map[string]*campaign{},
		watchReady: make(chan struct{}), ready: make(chan struct{})}, nil
}

// Run serves until ctx ends: it takes the coordinator lease (standing by
// while another coordinator holds it, see lease.go), then resumes the
// running campaigns, watches task states, handles max-deliveries advisories
// and answers the API. It returns ErrLeaseLost if another coordinator took
// the lease over meanwhile, and with Options.NoStandby ErrLeaseHeld if one
// held it.
func (co *Coordinator) Run(ctx context.Context) error {
	if err := co.readStoreID(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	l, err := co.newLease(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if err := l.acquire(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		l.keep(lctx, cancel)
	}()
	err = co.run(lctx)
	cancel(nil)
	<-kept
	if cause := context.Cause(lctx); errors.Is(cause, ErrLeaseLost) {
		return cause // the command names the coordinator (it said "coordinator: coordinator: …")
	}
	l.release()
	return err
}

func (co *Coordinator) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	co.mu.Lock()
	co.runCtx = ctx
	co.mu.Unlock()
	defer func() {
		co.mu.Lock()
		co.runCtx = nil
		co.mu.Unlock()
	}()
	bad, err := co.loadCampaigns(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	watchErr, stop, err := co.startWatch(ctx)
	if err != nil || stop == nil {
		return err
	}
	defer stop()
	co.reconcileRunning(ctx, "resuming", false)
	// After the watch has replayed the task states, as for a submission:
	// a campaign is rebuilt by submitting it again.
	co.recoverStates(ctx, bad)
	unsubscribe, err := co.serve(ctx)
	if err != nil {
		return err
	}
	defer unsubscribe()
	go co.verifyLoop(ctx)
	if co.o.FindUnknown {
		go co.findUnknown(ctx)
	}
	close(co.ready)
	tk := time.NewTicker(co.o.Reconcile)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-watchErr:
			return err
		case <-tk.C:
			co.keepStoreID(ctx)
			co.reconcileRunning(ctx, "reconciling", true)
		}
	}
}

// startWatch starts following the task states and waits until the bucket
// has been replayed (so that the classification of existing results is
// known). A nil stop with a nil error: ctx ended.
func (co *Coordinator) startWatch(ctx context.Context) (watchErr <-chan error, stop func(), err error) {
	watcher, err := co.h.TaskStates.WatchAll(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("coordinator: watching task states: %w", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- co.watch(ctx, watcher) }()
	select {
	case <-co.watchReady:
		return errc, func() { _ = watcher.Stop() }, nil
	case err := <-errc:
		_ = watcher.Stop()
		return nil, nil, err
	case <-ctx.Done():
		_ = watcher.Stop()
		return nil, nil, nil
	}
}

// reconcileRunning reconciles every running campaign (skipping those
// being finalised when skipFinalizing), logging failures as doing.
func (co *Coordinator) reconcileRunning(ctx context.Context, doing string, skipFinalizing bool) {
	co.mu.Lock()
	var running []*campaign
	for _, c := range co.camps {
		if c.st.State == protocol.CampaignRunning && !(skipFinalizing && c.finalizing) && c.submitting == 0 {
			running = append(running, c)
		}
	}
	co.mu.Unlock()
	for _, c := range running {
		if _, _, _, err := co.reconcile(ctx, c, true); err != nil {
			co.o.Logf("coordinator: %s %s: %v", doing, c.id, err)
		}
	}
}

// pausedWorker is what the last heartbeat of a worker paused on its
// store said (Coordinator.paused).
type pausedWorker struct {
	host, reason string
	since, at    time.Time
}

// heartbeat keeps the workers whose heartbeats say their store is
// unavailable (protocol.Heartbeat.StorageDown).
func (co *Coordinator) heartbeat(m *nats.Msg) {
	var hb protocol.Heartbeat
	if json.Unmarshal(m.Data, &hb) != nil || hb.Worker == "" {
		return
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	if hb.StorageDown == "" || hb.Stopping {
		delete(co.paused, hb.Worker)
		return
	}
	if co.paused == nil {
		co.paused = map[string]pausedWorker{}
	}
	co.paused[hb.Worker] = pausedWorker{host: hb.Host, reason: hb.StorageDown, since: hb.StorageDownSince, at: time.Now()}
}

// pausedLocked lists the workers paused on their store, whose last
// heartbeat is recent (three intervals), for a running campaign's status
// (Status.Paused); the caller holds co.mu.
func (co *Coordinator) pausedLocked() []string {
	var out []string
	for name, p := range co.paused {
		if time.Since(p.at) > 3*protocol.HeartbeatInterval {
			delete(co.paused, name)
			continue
		}
		out = append(out, fmt.Sprintf("worker %s (%s): paused since %s: its store is unavailable (%s); it takes no task and holds its finished results until the store is back",
			termtext.OneLine(name), termtext.OneLine(p.host), p.since.Format(time.RFC3339), termtext.OneLine(p.reason)))
	}
	sort.Strings(out)
	return out
}

// PausedWorkers lists the workers whose recent heartbeats say their store
// is unavailable, one line each (as Status.Paused).
func (co *Coordinator) PausedWorkers() []string {
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.pausedLocked()
}

// serve answers the API and handles max-deliveries advisories until the
// returned function is called.
func (co *Coordinator) serve(ctx context.Context) (func(), error) {
	var subs []*nats.Subscription
	unsubscribe := func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}
	for subj, h := range map[string]nats.MsgHandler{
		protocol.APISubmit: co.apiSubmit,
		protocol.APIStatus: co.apiStatus,
		protocol.APICancel: co.apiCancel,
		protocol.APIList:   co.apiList,
		// Workers' heartbeats, for the ones paused on their store.
		protocol.HeartbeatWildcard: co.heartbeat,
	} {
		s, err := co.nc.Subscribe(subj, h)
		if err != nil {
			unsubscribe()
			return nil, fmt.Errorf("coordinator: subscribing %s: %w", subj, err)
		}
		subs = append(subs, s)
	}
	cc, err := co.h.Advisories.Consume(func(m jetstream.Msg) { co.advisory(ctx, m) })
	if err != nil {
		unsubscribe()
		return nil, fmt.Errorf("coordinator: consuming advisories: %w", err)
	}
	_ = co.nc.Flush()
	return func() { cc.Stop(); unsubscribe() }, nil
}

// Ready is closed once Run has resumed the running campaigns and answers
// the API.
func (co *Coordinator) Ready() <-chan struct{} { return co.ready }

// loadCampaigns reads the campaign states; running campaigns are expanded
// so that they can be resumed. It returns the campaigns whose entry does
// not decode or check (readState), whose entry disagrees with its
// manifest in the store (crossCheck), and the running ones that could
// not be resumed from it, for recoverStates: the first and last vanished
// before, with a line in the log; the second were trusted.
func (co *Coordinator) loadCampaigns(ctx context.Context) ([]badState, error) {
	lister, err := co.h.Campaigns.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("coordinator: listing campaigns: %w", err)
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	var bad []badState
	var sts []protocol.CampaignState
	var at []time.Time
	for _, k := range keys {
		e, err := co.h.Campaigns.Get(ctx, k)
		if err != nil {
			continue
		}
		st, err := readState(k, e.Value())
		if err != nil {
			bad = append(bad, badState{id: k, why: err.Error(), at: e.Created()})
			continue
		}
		sts, at = append(sts, st), append(at, e.Created())
	}
	// Before any is resumed: a finished campaign flipped to running would
	// have its tasks generated for nothing.
	lies := co.crossCheck(ctx, sts)
	for i, st := range sts {
		k := st.ID
		if d := lies[i]; d.why != "" {
			bad = append(bad, badState{id: k, why: d.why, at: at[i], noManifest: d.noManifest})
			continue
		}
		recount := lies[i].recount != nil
		if recount {
			if why, ok := co.recountCancelled(&st, lies[i].recount); !ok {
				bad = append(bad, badState{id: k, why: why, at: at[i]})
				continue
			}
		}
		c := &campaign{id: st.ID, st: st, finished: make(chan struct{})}
		if st.State == protocol.CampaignRunning && st.Store != "" && st.Store != co.storeID {
			// Its spec and results are in the other store; publishing
			// its tasks would stop every worker on that store.
			co.o.Logf("coordinator: campaign %s (%s) runs on store %s, not this coordinator's store %s (%s): not resumed; submit it again to run it on this store", k, st.Name, st.Store, co.storeID, co.o.Store.URL())
			co.mu.Lock()
			if co.elsewhere == nil {
				co.elsewhere = map[string]protocol.CampaignState{}
			}
			co.elsewhere[st.ID] = st
			co.mu.Unlock()
			continue
		}
		if st.State == protocol.CampaignRunning {
			if err := co.resume(ctx, c); err != nil {
				co.o.Logf("coordinator: campaign %s cannot be resumed from its state: %v", k, err)
				bad = append(bad, badState{id: k, why: "it cannot be resumed from it: " + err.Error(), at: at[i]})
				continue
			}
		} else {
			c.close()
		}
		co.mu.Lock()
		co.camps[st.ID] = c
		co.mu.Unlock()
		if recount {
			// Once: the next start finds it agreeing.
			if err := co.putState(ctx, c); err != nil {
				co.o.Logf("coordinator: campaign %s: writing its corrected entry back: %v", k, err)
			}
		}
	}
	return bad, nil
}

// resume gives running campaign c, read from its state, its spec, tasks
// and expected code.
func (co *Coordinator) resume(ctx context.Context, c *campaign) error {
	if err := co.loadSpec(ctx, c); err != nil {
		return err
	}
	if err := co.expand(c); err != nil {
		return err
	}
	var err error
	c.impl, err = co.impls(ctx, c.id)
	return err
}

// expand fills c's tasks from its spec.
func (co *Coordinator) expand(c *campaign) error {
	pins, err := protocol.ReadPins(context.Background(), co.o.Store, c.id)
	if err != nil {
		return err
	}
	var pinned map[string]protocol.PluginPin
	if pins != nil {
		pinned = pins.Policies
	}
	camp, err := sweep.Plan(c.st.Spec, co.catalog(pinned))
	if err != nil {
		return err
	}
	if camp.ID != c.id {
		return fmt.Errorf("the stored spec now expands to campaign %s (different msjfarm version?)", camp.ID)
	}
	if c.tl, err = newTaskList(camp); err != nil {
		return err
	}
	c.warnings = camp.Warnings
	c.done, c.failed, c.running = newTaskSet(c.tl), map[string]string{}, map[string]string{}
	c.initPoints()
	// Counted from the plan, not taken from the state (anyone on NATS
	// writes it): the manifest records both.
	c.st.Total, c.st.Points = c.tl.Len(), camp.Points
	co.initVerifyLocked(c)
	return nil
}

func splitKey(key string) (campaign, task string, ok bool) {
	for i := 0; i < len(key); i++ {
		if key[i] == '.' {
			return key[:i], key[i+1:], i > 0 && i < len(key)-1
		}
	}
	return "", "", false
}

// maxRejected bounds the rejections a campaign's status lists.
const maxRejected = 10

// apply records a task state; the caller holds co.mu.
func (c *campaign) apply(task string, st protocol.TaskState) {
	if st.State == protocol.StateRejected {
		// Recorded whether or not the task is the campaign's: a forged
		// message may name any id. The task's own message is published
		// again by the next reconcile, since it has no result.
		if len(c.rejected) < maxRejected {
			c.rejected = append(c.rejected, refusalLine(task, st))
		}
		c.rejectedN++
		delete(c.running, task)
		return
	}
	if !c.tl.Has(task) {
		return
	}
	c.noteAttempt(task, st.Attempt)
	switch st.State {
	case protocol.StateDone:
		c.done.add(task)
		delete(c.failed, task)
		delete(c.running, task)
	case protocol.StateFailed:
		if !c.done.has(task) {
			c.failed[task] = st.Error
		}
		delete(c.running, task)
	case protocol.StateRunning:
		if !c.done.has(task) && c.failed[task] == "" {
			c.running[task] = st.Worker
		}
	default: // retrying, released, deleted
		delete(c.running, task)
	}
}

// watch follows the msjfarm_tasks bucket.
func (co *Coordinator) watch(ctx context.Context, w jetstream.KeyWatcher) error {
	ready := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			switch {
			case !ok && ctx.Err() != nil:
				return nil
			case !ok:
				// The server dropped the task-state bucket: a restart
				// without its JetStream store (or a deleted bucket).
				return fmt.Errorf("coordinator: the NATS server closed its watch of the task states (bucket %s): did it restart without its JetStream store? "+
					"Start the coordinator again to recreate its streams and buckets; campaigns the server no longer knows are resumed by submitting their sweeps again (stored results are reused, nothing finished runs again)", protocol.TaskBucket)
			case e == nil: // the bucket has been replayed
				if !ready {
					ready = true
					close(co.watchReady)
				}
			default:
				co.taskUpdate(ctx, e, ready)
			}
		}
	}
}

// taskUpdate applies one task-state entry to its campaign (if loaded) and
// starts what it completes: the campaign's finalisation, or in precision
// mode the judgement of its point (both read records: not under the
// lock). Before the bucket is replayed (!ready) it only records.
func (co *Coordinator) taskUpdate(ctx context.Context, e jetstream.KeyValueEntry, ready bool) {
	if co.malformedUpdate(e, ready) {
		return
	}
	var st protocol.TaskState
	if e.Operation() == jetstream.KeyValuePut {
		if err := json.Unmarshal(e.Value(), &st); err != nil {
			return
		}
	}
	cid, tid, ok := splitKey(e.Key())
	if !ok {
		return
	}
	co.mu.Lock()
	c := co.camps[cid]
	if c == nil && st.State == protocol.StateRejected {
		co.noteStrayLocked(cid, tid, st, ready)
		co.mu.Unlock()
		return
	}
	if c == nil || c.tl == nil {
		// Not loaded (finished): a resubmission classifies its tasks by
		// reading their records. A refusal naming it is listed all the
		// same: someone publishes forged work.
		if c != nil && st.State == protocol.StateRejected {
			c.apply(tid, st)
			if ready {
				co.o.Logf("coordinator: campaign %s (finished): task %s: a worker (%s) refused a task message: %s", cid, tid, st.Worker, st.Error)
			}
		}
		co.mu.Unlock()
		return
	}
	c.apply(tid, st)
	if st.State == protocol.StateRejected && ready {
		co.o.Logf("coordinator: campaign %s: task %s: a worker (%s) refused a task message: %s", cid, tid, st.Worker, st.Error)
	}
	fin, grow := c.next(tid, st, ready)
	co.mu.Unlock()
	if fin {
		go co.finalize(ctx, c)
	}
	if grow {
		go co.grow(ctx, c, false)
	}
}

// next decides what a task's new state st starts: the finalisation of a
// complete campaign (marked finalizing here), or the judgement of a
// precision point whose replications have all finished. The caller holds
// co.mu.
func (c *campaign) next(tid string, st protocol.TaskState, ready bool) (finalize, grow bool) {
	if !ready || c.st.State != protocol.CampaignRunning {
		return false, false
	}
	if c.complete() && !c.finalizing {
		c.finalizing = true
		return true, false
	}
	finished := st.State == protocol.StateDone || st.State == protocol.StateFailed
	if c.prec == nil || !finished {
		return false, false
	}
	t, ok := c.tl.Get(tid)
	if !ok || !c.pointReady(t.Point) {
		return false, false
	}
	c.candidates[t.Point] = true
	return false, true
}
