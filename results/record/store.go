package record

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
)

// The content-addressed result store (docs/results.md).
//
// A replication's result is stored once, at
// storage.StoredResultKey(Key(task id, Impl)), and every campaign that has
// the task holds a Ref to it at storage.ResultKey(campaign, task). The task
// id (sweep.TaskID) is already the hash of everything the sweep says about
// the replication (workload, arrival process, policy and parameters, run
// block with warm-up rule, seed); what it cannot say is which code computed
// the numbers, which is known only to the process that runs the task.
// Impl names that code: the engine version and the policy implementation
// (a plugin binary by sha256, or the engine's built-in policies).
//
// Lookups: before publishing, the coordinator resolves each policy's
// expected Impl (the campaign's pinned plugin, else the built-ins of its
// own engine) and looks for the result under that key. A worker stores
// what it ran under the Impl its runner reports (provenance), so a result
// is never filed under code that did not produce it: when a worker ran
// other code than the coordinator expected, a later campaign misses it
// and runs the task again rather than reusing a number it cannot vouch
// for.

// Impl identifies the code that computes a result.
type Impl struct {
	// Engine is the sim.Version of the engine that ran the replication (in
	// the msjfarm process, or linked into the plugin).
	Engine string `json:"engine"`
	// Policy is "builtin" (the policies compiled into msjfarm, versioned
	// with the engine: a change to one that changes a number bumps
	// sim.Version) or "plugin:<sha256 of the binary>".
	Policy string `json:"policy"`
}

// Builtin is the Impl of an in-process run by this executable.
func Builtin() Impl { return Impl{Engine: sim.Version, Policy: "builtin"} }

// Plugin is the Impl of a run in the plugin binary with this sha256, which
// links engine version engine.
func Plugin(engine, sha256 string) Impl { return Impl{Engine: engine, Policy: "plugin:" + sha256} }

// ImplOf is the Impl a record's provenance names; false when the
// provenance does not say (a failure, or a record without provenance),
// and such a record is never filed under a content key.
func ImplOf(p Provenance) (Impl, bool) {
	switch {
	case p.Engine == "":
		return Impl{}, false
	case p.Runner == "plugin" && p.Builtin:
		// msjfarm serving its own built-in family: the built-in code.
		return Impl{Engine: p.Engine, Policy: "builtin"}, true
	case p.Runner == "plugin" && p.PluginSHA256 != "":
		return Plugin(p.Engine, p.PluginSHA256), true
	case p.Runner == "in-process":
		return Impl{Engine: p.Engine, Policy: "builtin"}, true
	}
	return Impl{}, false
}

// Key is the content key of the result of task taskID computed by im: 32
// hex digits (128 bits) of SHA-256 over {"task", "engine", "policy"}.
func Key(taskID string, im Impl) string {
	b, _ := json.Marshal(struct {
		Task   string `json:"task"`
		Engine string `json:"engine"`
		Policy string `json:"policy"`
	}{taskID, im.Engine, im.Policy})
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])[:32]
}

// Ref is what a campaign stores for a task whose result is in the
// content-addressed store: the content key.
type Ref struct {
	Ref string `json:"ref"`
}

// RefJSON is the encoded Ref to key.
func RefJSON(key string) []byte {
	b, _ := json.Marshal(Ref{Ref: key})
	return b
}

// ParseRef returns the content key of an encoded Ref, and false for
// anything else (a full record of layout 1 or a failure record).
func ParseRef(data []byte) (string, bool) {
	var r struct {
		Ref  string          `json:"ref"`
		Task json.RawMessage `json:"task"`
	}
	if json.Unmarshal(data, &r) != nil || r.Ref == "" || r.Task != nil || len(r.Ref) < 2 {
		return "", false
	}
	return r.Ref, true
}

// Read returns the record of campaign's task: the stored result its Ref
// names, or the record stored in place (a failure, or a layout-1 result),
// with the record's bytes. errors.Is(err, storage.ErrNotFound) when the
// campaign has no entry for the task. A stored object that is not a record
// of task (not a record at all, or of another task, or whose task content
// does not hash to the id: Decode) is an *IntegrityError naming the
// object, so that no reader aggregates a result that is not the
// campaign's.
func Read(ctx context.Context, st storage.Store, campaign, task string) (*Record, []byte, error) {
	r, objs, err := ReadObjects(ctx, st, campaign, task)
	if len(objs) == 0 {
		return r, nil, err
	}
	return r, objs[len(objs)-1].Data, err
}

// Object is one stored object as read: its key and bytes.
type Object struct {
	Key  string
	Data []byte
}

// ReadObjects is Read returning every object it read, in order: the
// campaign's entry and, when that is a Ref, the stored result it names
// (the last object is the record). The checksums of a finalised campaign
// (results/archive) cover exactly these objects.
func ReadObjects(ctx context.Context, st storage.Store, campaign, task string) (*Record, []Object, error) {
	key := storage.ResultKey(campaign, task)
	data, err := st.Get(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	objs := []Object{{Key: key, Data: data}}
	if k, ok := ParseRef(data); ok {
		key = storage.StoredResultKey(k)
		if data, err = st.Get(ctx, key); err != nil {
			// The entry is returned: a caller that knows the campaign's
			// checksums can tell a result deleted since it finalised.
			return nil, objs, fmt.Errorf("%s refers to result %s: %w", objs[0].Key, k, err)
		}
		objs = append(objs, Object{Key: key, Data: data})
	}
	r, err := Decode(data, task)
	if err != nil {
		ie, ok := errors.AsType[*IntegrityError](err)
		if !ok {
			ie = &IntegrityError{Task: task, Reason: err.Error()}
		}
		ie.Key = key
		return r, objs, ie
	}
	if err := resolveCounterInfo(ctx, st, r); err != nil {
		return nil, nil, fmt.Errorf("%s: counter descriptions: %w", key, err)
	}
	return r, objs, nil
}

// Follow decodes the campaign entry data read from key, fetching the
// stored result when it is a Ref.
func Follow(ctx context.Context, st storage.Store, key string, data []byte) (*Record, []byte, error) {
	if k, ok := ParseRef(data); ok {
		var err error
		if data, err = st.Get(ctx, storage.StoredResultKey(k)); err != nil {
			return nil, nil, fmt.Errorf("%s refers to result %s: %w", key, k, err)
		}
		key = storage.StoredResultKey(k)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", key, err)
	}
	if err := resolveCounterInfo(ctx, st, &r); err != nil {
		return nil, nil, fmt.Errorf("%s: counter descriptions: %w", key, err)
	}
	return &r, data, nil
}

// Store files a successful record under its content key (PutIfAbsent) and
// references it from the campaign. created reports whether this call
// stored the result; false means an identical computation (same task,
// same code) was stored first, by this campaign or another, and that one
// is kept: a result is never written twice.
//
// Its counter descriptions are stored first, once, in their own object
// (PutCounterInfo), and rec keeps only the reference (rec.CounterInfo is
// cleared, CounterInfoRef set: rec is what was stored), so that a record
// is never stored referring to an object that is not there.
func Store(ctx context.Context, st storage.Store, campaign string, rec *Record) (key string, created bool, err error) {
	im, ok := ImplOf(rec.Provenance)
	if !ok || rec.Failed() {
		return "", false, errors.New("record: only a successful record with provenance has a content key")
	}
	if len(rec.CounterInfo) > 0 {
		sum, err := PutCounterInfo(ctx, st, rec.CounterInfo)
		if err != nil {
			return "", false, err
		}
		rec.CounterInfo, rec.CounterInfoRef = nil, sum
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return "", false, err
	}
	key = Key(rec.Task.ID, im)
	if created, err = st.PutIfAbsent(ctx, storage.StoredResultKey(key), data); err != nil {
		return key, false, err
	}
	if !created {
		if err := confirmImported(ctx, st, key, rec); err != nil {
			return key, false, err
		}
	}
	if _, err := st.PutIfAbsent(ctx, storage.ResultKey(campaign, rec.Task.ID), RefJSON(key)); err != nil {
		return key, created, err
	}
	return key, created, nil
}

// MigrateStats counts what Migrate did.
type MigrateStats struct {
	Campaigns int // campaigns converted to layout 2
	Moved     int // results filed under their content key
	Kept      int // entries left in place (failures, records without provenance)
}

// Migrate converts every layout-1 campaign in st (full records under
// campaigns/<id>/results/, no layout marker) to layout 2: each successful
// record with provenance is filed under its content key and the campaign
// entry is replaced by a Ref; failures and records whose code cannot be
// named stay in place (readers read them there, and they are never
// reused). Nothing is deleted before its copy is stored, so an interrupted
// migration loses nothing and the next one finishes it. Idempotent.
func Migrate(ctx context.Context, st storage.Store) (MigrateStats, error) {
	var ms MigrateStats
	keys, err := st.List(ctx, "campaigns/")
	if err != nil {
		return ms, err
	}
	marked := map[string]bool{}
	results := map[string][]string{}
	for _, k := range keys {
		rest, _ := strings.CutPrefix(k, "campaigns/")
		id, tail, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		if tail == "layout" {
			marked[id] = true
		}
		if _, ok := storage.ResultTaskID(id, k); ok {
			results[id] = append(results[id], k)
		}
	}
	var ids []string
	for id := range results {
		if !marked[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		moved, kept, err := migrateCampaign(ctx, st, results[id])
		ms.Moved += moved
		ms.Kept += kept
		if err != nil {
			return ms, fmt.Errorf("migrating campaign %s: %w", id, err)
		}
		if err := st.Put(ctx, storage.LayoutKey(id), storage.LayoutMarker); err != nil {
			return ms, err
		}
		ms.Campaigns++
	}
	return ms, nil
}

func migrateCampaign(ctx context.Context, st storage.Store, keys []string) (moved, kept int, err error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			m, e := migrateOne(ctx, st, k)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case e != nil && err == nil:
				err = e
			case e == nil && m:
				moved++
			case e == nil:
				kept++
			}
		}()
	}
	wg.Wait()
	return moved, kept, err
}

func migrateOne(ctx context.Context, st storage.Store, k string) (bool, error) {
	data, err := st.Get(ctx, k)
	if err != nil {
		return false, err
	}
	if _, ok := ParseRef(data); ok {
		return false, nil
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return false, nil // unreadable: left for the reader to report
	}
	im, ok := ImplOf(r.Provenance)
	if !ok || r.Failed() {
		return false, nil
	}
	key := Key(r.Task.ID, im)
	// The bytes are kept as they are: the migrated result is the stored one.
	if _, err := st.PutIfAbsent(ctx, storage.StoredResultKey(key), data); err != nil {
		return false, err
	}
	if err := st.Put(ctx, k, RefJSON(key)); err != nil {
		return false, err
	}
	return true, nil
}
