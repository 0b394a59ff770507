package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker"
)

// logLines collects a coordinator's log.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logLines) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// runCoordinator starts a coordinator on its own NATS connection; kill
// closes that connection first (so nothing is released: a crash) and then
// stops it.
func runCoordinator(t *testing.T, e *env, st storage.Store, o coordinator.Options) (co *coordinator.Coordinator, done <-chan error, kill func(), logs *logLines) {
	t.Helper()
	nc, err := nats.Connect(e.url)
	if err != nil {
		t.Fatal(err)
	}
	logs = &logLines{}
	o.Conn, o.Store, o.Reconcile = nc, st, 500*time.Millisecond
	o.Logf = func(format string, args ...any) { logs.logf(format, args...); t.Logf(format, args...) }
	co, err = coordinator.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- co.Run(ctx)
		close(errc) // Run returned: later receives do not block
	}()
	var once sync.Once
	kill = func() {
		once.Do(func() {
			nc.Close()
			cancel()
			select {
			case <-errc:
			case <-time.After(10 * time.Second):
				t.Error("a killed coordinator's Run did not return")
			}
		})
	}
	t.Cleanup(kill)
	return co, errc, kill, logs
}

// readyCoordinator is runCoordinator, waiting (20 s at most) until the
// coordinator holds the lease.
func readyCoordinator(t *testing.T, e *env, st storage.Store, o coordinator.Options) (*coordinator.Coordinator, func()) {
	t.Helper()
	co, _, kill, _ := runCoordinator(t, e, st, o)
	select {
	case <-co.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the first coordinator never became ready")
	}
	return co, kill
}

// TestLeaseStandbyTakesOver: of two coordinators on one NATS, the second
// stands by (saying so once) and serves nothing; when the first dies
// without releasing the lease, the second takes over within the lease's
// TTL and completes the campaign the first accepted. A third with
// NoStandby refuses to start, naming the holder.
//
// Complexity 22: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestLeaseStandbyTakesOver(t *testing.T) {
	e := newEnv(t)
	const ttl = 2 * time.Second
	co1, kill1 := readyCoordinator(t, e, e.store, coordinator.Options{LeaseTTL: ttl})
	co2, done2, _, logs2 := runCoordinator(t, e, e.store, coordinator.Options{LeaseTTL: ttl})
	// A refusing one (NoStandby), naming the holder and its storage.
	_, done3, _, _ := runCoordinator(t, e, e.store, coordinator.Options{LeaseTTL: ttl, NoStandby: true})
	select {
	case err := <-done3:
		if !errors.Is(err, coordinator.ErrLeaseHeld) || !strings.Contains(err.Error(), "refusing") || !strings.Contains(err.Error(), e.store.URL()) {
			t.Fatalf("the NoStandby coordinator: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the NoStandby coordinator did not refuse")
	}
	// Two on another store, standing by or not: both refuse at once,
	// naming both stores.
	other, err := storage.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, noStandby := range []bool{false, true} {
		_, done4, _, _ := runCoordinator(t, e, other, coordinator.Options{LeaseTTL: ttl, NoStandby: noStandby})
		select {
		case err := <-done4:
			if !errors.Is(err, coordinator.ErrOtherStore) || !strings.Contains(err.Error(), e.store.URL()) || !strings.Contains(err.Error(), other.URL()) {
				t.Fatalf("a coordinator on another store (NoStandby %v): %v", noStandby, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("a coordinator on another store (NoStandby %v) did not refuse", noStandby)
		}
	}

	ctx := context.Background()
	r, err := co1.Submit(ctx, protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	// The standby has answered nothing and is not ready.
	time.Sleep(ttl) // several of its polls
	select {
	case <-co2.Ready():
		t.Fatal("the second coordinator became ready while the first held the lease")
	case err := <-done2:
		t.Fatalf("the standby coordinator stopped: %v", err)
	default:
	}
	if n := logs2.count("holds the lease; standing by"); n != 1 {
		t.Fatalf("the standby said it stands by %d times, want once", n)
	}

	t0 := time.Now()
	kill1()
	select {
	case <-co2.Ready():
	case err := <-done2:
		t.Fatalf("the standby coordinator stopped: %v", err)
	case <-time.After(3 * ttl): // the TTL, a poll, and loading on a loaded machine
		t.Fatalf("the standby did not take over within %v", 3*ttl)
	}
	took := time.Since(t0)
	t.Logf("takeover %v after the holder died (lease TTL %v)", took.Round(time.Millisecond), ttl)
	if logs2.count("took over the lease") != 1 {
		t.Error("the takeover was not logged")
	}
	var cr countRunner
	e.startWorker(worker.Options{Concurrency: 2, Name: "w1", Runner: &cr})
	s := waitDone(t, co2, r.Campaign, 5*time.Minute)
	if s.State != protocol.CampaignDone || s.Done != 6 || s.Failed != 0 {
		t.Fatalf("status after the takeover %+v", s)
	}
	if n, mx := cr.total(); n != 6 || mx != 1 {
		t.Fatalf("runs: %d total, max %d per task; want 6 and 1", n, mx)
	}
}

// TestLeaseReleasedOnStop: a coordinator that stops in order releases the
// lease, so the next one starts at once, not a TTL later.
func TestLeaseReleasedOnStop(t *testing.T) {
	e := newEnv(t)
	_, stop := e.startCoordinator(protocol.Layout{})
	stop()
	t0 := time.Now()
	co, err := coordinator.New(context.Background(), coordinator.Options{Conn: e.nc, Store: e.store, NoStandby: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- co.Run(ctx) }()
	select {
	case <-co.Ready():
	case err := <-errc:
		t.Fatalf("after an orderly stop: %v", err)
	}
	t.Logf("next coordinator ready %v after the first stopped", time.Since(t0).Round(time.Millisecond))
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestLeaseOfDeadProcessTakenAtOnce: a lease left by a coordinator
// process of this host that no longer runs (killed, then restarted) is
// taken over at once, even by a coordinator that would refuse a live
// holder; the lease's value names no credentials. The same host name,
// PID namespace and PID on another machine (another boot id: a cloned VM)
// is not this host: refused, as a live holder is (it was deleted at once).
func TestLeaseOfDeadProcessTakenAtOnce(t *testing.T) {
	e := newEnv(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	ns, _ := os.Readlink("/proc/self/ns/pid")
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	holder := coordinator.LeaseHolder{ID: "old", Host: host, PID: dead.Process.Pid, Started: time.Now(), Storage: "old", PIDNamespace: ns,
		Boot: "00000000-0000-4000-8000-000000000000"}
	js, _ := jetstream.New(e.nc)
	ctx := context.Background()
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: protocol.LeaseBucket, History: 1, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	val, _ := json.Marshal(holder)
	if _, err := kv.Create(ctx, protocol.LeaseKey, val); err != nil {
		t.Fatal(err)
	}
	_, done0, _, _ := runCoordinator(t, e, e.store, coordinator.Options{NoStandby: true})
	select {
	case err := <-done0:
		if !errors.Is(err, coordinator.ErrLeaseHeld) {
			t.Fatalf("a holder of another boot (machine): %v, want ErrLeaseHeld", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a holder of another boot (machine): no answer in 20 s")
	}
	holder.Boot = strings.TrimSpace(string(boot))
	val, _ = json.Marshal(holder)
	if _, err := kv.Put(ctx, protocol.LeaseKey, val); err != nil {
		t.Fatal(err)
	}
	co, done, _, logs := runCoordinator(t, e, e.store, coordinator.Options{NoStandby: true})
	select {
	case <-co.Ready():
	case err := <-done:
		t.Fatalf("a lease of a dead process was not taken over: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("not ready after 20 s")
	}
	ent, err := kv.Get(ctx, protocol.LeaseKey)
	if err != nil {
		t.Fatal(err)
	}
	var h coordinator.LeaseHolder
	if err := json.Unmarshal(ent.Value(), &h); err != nil || h.PID != os.Getpid() || h.Storage != e.store.URL() {
		t.Fatalf("lease after the takeover: %s (%v)", ent.Value(), err)
	}
	// The old holder used other storage: said, since its campaigns'
	// results are not in this one.
	if logs.count("WARNING: the previous coordinator used storage old") != 1 {
		t.Error("no warning that the previous holder used other storage")
	}
}

// urlStore is a real store presented under another URL, standing for a
// coordinator configured with other storage (an S3 service elsewhere) or
// for a Store implementation whose URL carries credentials.
type urlStore struct {
	storage.Store
	url string
}

func (s urlStore) URL() string { return s.url }

// TestLeaseStorageKeepsEndpoint: the lease records the whole storage
// location with its credentials masked. Two S3 URLs naming the same bucket
// on different endpoints (the endpoint is a query parameter) are different
// storage, so a coordinator taking over from one on another endpoint
// warns; two that differ only in their secrets are the same storage (no
// warning), and neither secret is stored in the lease, which anyone on the
// NATS system can read.
func TestLeaseStorageKeepsEndpoint(t *testing.T) {
	e := newEnv(t)
	const ttl = time.Second
	js, _ := jetstream.New(e.nc)
	ctx := context.Background()
	// holder returns the lease's current value, checking that its storage
	// is the bucket farm on endpoint.
	holder := func(endpoint string) (coordinator.LeaseHolder, string) {
		t.Helper()
		kv, err := js.KeyValue(ctx, protocol.LeaseBucket)
		if err != nil {
			t.Fatal(err)
		}
		ent, err := kv.Get(ctx, protocol.LeaseKey)
		if err != nil {
			t.Fatal(err)
		}
		var h coordinator.LeaseHolder
		if err := json.Unmarshal(ent.Value(), &h); err != nil {
			t.Fatalf("lease %s: %v", ent.Value(), err)
		}
		u, err := url.Parse(h.Storage)
		if err != nil || u.Scheme != "s3" || u.Host != "farm" || u.Query().Get("endpoint") != endpoint {
			t.Fatalf("lease storage %q: want s3://farm with endpoint %s (%v)", h.Storage, endpoint, err)
		}
		return h, string(ent.Value())
	}
	start := func(loc string) (func(), *logLines) {
		t.Helper()
		co, done, kill, logs := runCoordinator(t, e, urlStore{e.store, loc}, coordinator.Options{LeaseTTL: ttl})
		select {
		case <-co.Ready():
		case err := <-done:
			t.Fatalf("coordinator on %s stopped: %v", loc, err)
		case <-time.After(20 * time.Second):
			t.Fatalf("coordinator on %s not ready after 20 s", loc)
		}
		return kill, logs
	}

	kill1, _ := start("s3://farm?endpoint=a.example:9000&secure=false")
	holder("a.example:9000")
	kill1() // a crash: the lease stays until its TTL runs out

	// Same bucket, another endpoint: another URL of the same store (its
	// identity says so), so no warning.
	const loc2 = "s3://ak:SECRET-2@farm?endpoint=b.example:9000&secure=false&secret_key=SECRET-2"
	kill2, logs2 := start(loc2)
	if n := logs2.count("WARNING"); n != 0 {
		t.Errorf("taking over the same store under another URL: %d warnings", n)
	}
	if _, raw := holder("b.example:9000"); strings.Contains(raw, "SECRET") {
		t.Errorf("the lease stores a secret: %s", raw)
	}
	kill2()

	// The same storage with other secrets: no warning, no secret stored.
	kill3, logs3 := start(strings.ReplaceAll(loc2, "SECRET-2", "SECRET-3"))
	defer kill3()
	if n := logs3.count("WARNING"); n != 0 {
		t.Errorf("taking over from the same storage with other credentials: %d warnings", n)
	}
	h, raw := holder("b.example:9000")
	if strings.Contains(raw, "SECRET") {
		t.Errorf("the lease stores a secret: %s", raw)
	}
	if u, _ := url.Parse(h.Storage); u.User.Username() != "ak" || u.Query().Get("secure") != "false" {
		t.Errorf("lease storage %q: the user name and other parameters should be kept", h.Storage)
	}
}

// TestCampaignOfAnotherStoreNotResumed: a coordinator started on another
// store once the lease is free does not resume the running campaign of
// the store before it (its state names that store), saying so in its log
// and in the campaign's status (by id and in the list); it publishes none
// of its tasks, which would have stopped every worker on the campaign's
// store. A submission of the same sweep runs it on the new store.
func TestCampaignOfAnotherStoreNotResumed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	co1, _, kill1, _ := runCoordinator(t, e, e.store, coordinator.Options{LeaseTTL: time.Second})
	<-co1.Ready()
	r, err := co1.Submit(ctx, protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	kill1()
	js, _ := jetstream.New(e.nc)
	stream := func() uint64 {
		s, err := js.Stream(ctx, protocol.TaskStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	published := stream()
	other, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The spec is there too, as in a store that holds it by hand: only
	// the campaign's store tells.
	spec, _ := e.store.List(ctx, "specs/")
	for _, k := range spec {
		data, _ := e.store.Get(ctx, k)
		_ = other.Put(ctx, k, data)
	}
	// Once the killed holder's lease has expired (while it is held, a
	// coordinator on another store refuses: TestLeaseStandbyTakesOver).
	kv, err := js.KeyValue(ctx, protocol.LeaseBucket)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := kv.Get(ctx, protocol.LeaseKey); errors.Is(err, jetstream.ErrKeyNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed coordinator's lease never expired")
		}
	}
	co2, done2, _, logs := runCoordinator(t, e, other, coordinator.Options{LeaseTTL: time.Second})
	select {
	case <-co2.Ready():
	case err := <-done2:
		t.Fatalf("the second coordinator stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the second coordinator never became ready")
	}
	id1, _ := storage.ID(ctx, e.store)
	if n := logs.count("campaign " + r.Campaign + " (farm-small) runs on store " + id1 + ", not this coordinator's store"); n != 1 {
		t.Fatalf("%d lines say the campaign is not resumed, want 1", n)
	}
	// Its status says where it runs, by id and in the list (it read
	// "running" by id, and the list left it out).
	id2, _ := storage.ID(ctx, other)
	elsewhere := func(s protocol.Status) bool {
		return strings.Contains(s.Elsewhere, "runs on store "+id1+", not this coordinator's store "+id2) && strings.Contains(s.Elsewhere, "not resumed")
	}
	if s, err := co2.Status(ctx, r.Campaign); err != nil || !elsewhere(*s) {
		t.Fatalf("status of the campaign of the other store: %+v, %v", s, err)
	}
	if l := co2.List(); len(l) != 1 || l[0].Campaign != r.Campaign || !elsewhere(l[0]) {
		t.Fatalf("list: %+v, want the campaign of the other store, said so", l)
	}
	time.Sleep(time.Second) // two reconciles
	if now := stream(); now != published {
		t.Fatalf("%d task messages published for a campaign of another store", now-published)
	}
	// A worker on the new store meets the campaign's leftover messages,
	// which name the old store: it terminates them and goes on (stopping
	// would have stopped every worker of the farm in turn).
	w, wdone, wcancel := e.runWorkerOn(other, "moved")
	for deadline := time.Now().Add(60 * time.Second); w.Stats.Terminated.Load() < 6; time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-wdone:
			t.Fatalf("the worker on the new store stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker terminated %d of the 6 leftover messages", w.Stats.Terminated.Load())
		}
	}
	if n := w.Stats.Done.Load(); n != 0 {
		t.Fatalf("the worker ran %d tasks of the old store", n)
	}
	r2, err := co2.Submit(ctx, protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml")})
	if err != nil || r2.Campaign != r.Campaign || r2.Published != 6 || r2.Queued != 0 {
		t.Fatalf("submitted again on the new store: %+v, %v; want its 6 tasks published anew", r2, err)
	}
	s := waitDone(t, co2, r.Campaign, 2*time.Minute)
	if l := co2.List(); len(l) != 1 || s.Elsewhere != "" || l[0].Elsewhere != "" {
		t.Fatalf("moved to the new store: status %+v, list %+v", s, l)
	}
	wcancel()
	if err := <-wdone; err != nil || s.State != protocol.CampaignDone || s.Done != 6 {
		t.Fatalf("on the new store: worker %v, status %+v", err, s)
	}
}

// TestLeaseDeadHolderOnAnotherStore: a coordinator killed on the farm's
// old store (the lease not released) does not stop a coordinator or a
// worker started on the new store within the lease's TTL: both wait to see
// whether the holder renews its lease; it does not, so the worker goes on,
// the coordinator takes the lease over (warning that the previous one used
// another storage), and the worker completes a campaign submitted to it.
// Before, both stopped with ErrOtherStore, naming the dead holder.
func TestLeaseDeadHolderOnAnotherStore(t *testing.T) {
	e := newEnv(t)
	const ttl = 2 * time.Second
	_, kill1 := readyCoordinator(t, e, e.store, coordinator.Options{LeaseTTL: ttl})
	kill1()
	other, err := storage.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w, wdone, _ := e.runWorkerOn(other, "moved")
	co2, done2, _, logs := runCoordinator(t, e, other, coordinator.Options{LeaseTTL: ttl})
	select {
	case <-co2.Ready():
	case err := <-done2:
		t.Fatalf("the coordinator on the new store: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the coordinator on the new store did not take the lease over")
	}
	if logs.count("was not renewed") != 1 || logs.count("the previous coordinator used storage") != 1 {
		t.Errorf("the takeover from a holder on another store was not said (the lease not renewed, the previous storage)")
	}
	r, err := co2.Submit(context.Background(), protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	if s := waitDone(t, co2, r.Campaign, 2*time.Minute); s.State != protocol.CampaignDone || s.Done != 6 || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
	select {
	case err := <-wdone:
		t.Fatalf("the worker on the new store stopped: %v", err)
	default:
	}
	if n := w.Stats.Done.Load(); n != 6 {
		t.Errorf("the worker on the new store ran %d tasks, want 6", n)
	}
}

// TestLeaseNewcomerTTL: a coordinator started with a shorter lease TTL
// than the holder's does not shorten the holder's lease: one on the same
// store with NoStandby refuses, one on another store refuses once it has
// seen the holder renew, the holder keeps its lease and the bucket its
// TTL. Before, the newcomer set the bucket's TTL on its way in, NATS
// expired the holder's key, and the newcomer took the lease from a live
// holder past both refusals. The bucket keeps its TTL after a takeover
// too: a holder that set its own once it held the lease had its key
// expire by the old TTL meanwhile (two coordinators ready at once).
func TestLeaseNewcomerTTL(t *testing.T) {
	e := newEnv(t)
	const ttl, short = 6 * time.Second, 500 * time.Millisecond
	co1, done1, kill1, _ := runCoordinator(t, e, e.store, coordinator.Options{LeaseTTL: ttl})
	select {
	case <-co1.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the holder never became ready")
	}
	other, err := storage.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		st   storage.Store
		want error
	}{{e.store, coordinator.ErrLeaseHeld}, {other, coordinator.ErrOtherStore}} {
		_, done, _, _ := runCoordinator(t, e, c.st, coordinator.Options{LeaseTTL: short, NoStandby: true})
		select {
		case err := <-done:
			if !errors.Is(err, c.want) {
				t.Fatalf("a newcomer with a %v TTL: %v, want %v", short, err, c.want)
			}
		case <-time.After(3 * ttl):
			t.Fatalf("a newcomer with a %v TTL did not refuse", short)
		}
	}
	select {
	case err := <-done1:
		t.Fatalf("the holder stopped: %v", err)
	default:
	}
	js, _ := jetstream.New(e.nc)
	kv, err := js.KeyValue(context.Background(), protocol.LeaseBucket)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := kv.Status(context.Background()); err != nil || st.TTL() != ttl {
		t.Fatalf("the lease bucket's TTL: %v (%v), want the holder's %v", st.TTL(), err, ttl)
	}
	kill1()
	co3, done3, _, logs := runCoordinator(t, e, e.store, coordinator.Options{LeaseTTL: short})
	select {
	case <-co3.Ready():
	case err := <-done3:
		t.Fatalf("the next coordinator: %v", err)
	case <-time.After(4 * ttl):
		t.Fatal("the next coordinator never took the lease")
	}
	if st, err := kv.Status(context.Background()); err != nil || st.TTL() != ttl || logs.count("the lease's TTL is 6s, its bucket's") != 1 {
		t.Fatalf("after the takeover the bucket's TTL is %v (%v), want still %v, the new holder saying so once", st.TTL(), err, ttl)
	}
}

// TestLeaseBucketGone: a coordinator standing by when the lease bucket
// disappears (NATS's store wiped, the bucket deleted) makes it again and
// takes the lease. Before, it asked the stream that no longer existed for
// ever ("no response from stream").
func TestLeaseBucketGone(t *testing.T) {
	e := newEnv(t)
	const ttl = 2 * time.Second
	_, kill1 := readyCoordinator(t, e, e.store, coordinator.Options{LeaseTTL: ttl})
	co2, done2, _, _ := runCoordinator(t, e, e.store, coordinator.Options{LeaseTTL: ttl})
	time.Sleep(ttl) // standing by
	kill1()
	js, _ := jetstream.New(e.nc)
	if err := js.DeleteKeyValue(context.Background(), protocol.LeaseBucket); err != nil {
		t.Fatal(err)
	}
	select {
	case <-co2.Ready():
	case err := <-done2:
		t.Fatalf("the standby stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the standby did not take the lease once its bucket was gone")
	}
}
