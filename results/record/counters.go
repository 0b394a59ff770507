package record

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
)

// Counter descriptions are stored once, by content (docs/results.md).
//
// A policy's counter descriptions (labels, units, kinds and docs of its
// counters) are the same in every result it produces, and for MSFQ they
// were about a quarter of each record. Store moves them out of the record
// into one object at storage.CounterInfoKey(sha256 of its bytes) and
// leaves the sum in the record (CounterInfoRef); readers put them back.
//
// Why by content, rather than by plugin binary or by campaign: the key is
// the hash of the bytes, so an object can only be written with the bytes
// its name promises, and a reader checks that before it uses one. The
// descriptions come from a plugin, which may be hostile; the worker checks
// them (wire.CheckCounterInfo) and writes them, never the plugin. Other
// descriptions get another key, so no plugin can put words under another
// plugin's counters; identical descriptions (every campaign of a plugin,
// two builds of it) share one object. An object that does not hash to its
// name (written by something else with write access, or damaged) is not
// used: the counters show their raw names, and the next Store of the same
// descriptions writes it again. Concurrent workers write identical bytes
// (PutIfAbsent), so the write is idempotent.

// EncodeCounterInfo is the stored form of cs and its sha256 (hex), the
// name it is stored under.
func EncodeCounterInfo(cs sim.CounterInfos) (data []byte, sum string) {
	data, _ = json.Marshal(cs) // a slice of plain structs: cannot fail
	s := sha256.Sum256(data)
	return data, hex.EncodeToString(s[:])
}

// counterObjects caches the counter description objects this process has
// read or written. An object is immutable (its name is its hash), so a
// verified one is valid in every store and read once per process however
// many records refer to it; written remembers, per store, the objects
// known to be stored there so that a worker writes each once.
var counterObjects = struct {
	sync.Mutex
	data    map[string][]byte           // sum → verified bytes
	info    map[string]sim.CounterInfos // sum → decoded
	written map[string]bool             // store URL + " " + sum
}{data: map[string][]byte{}, info: map[string]sim.CounterInfos{}, written: map[string]bool{}}

// maxCachedCounterInfo bounds the cache. An honest campaign has a handful
// of distinct descriptions (one per policy build), but a hostile plugin
// can change its descriptions on every run: past the bound the cache is
// emptied, so such a plugin costs its objects one more read or write, and
// the process's memory stays bounded.
const maxCachedCounterInfo = 1024

func cacheCounterInfo(sum string, data []byte, cs sim.CounterInfos) {
	counterObjects.Lock()
	defer counterObjects.Unlock()
	if len(counterObjects.data) >= maxCachedCounterInfo {
		clear(counterObjects.data)
		clear(counterObjects.info)
	}
	counterObjects.data[sum], counterObjects.info[sum] = data, cs
}

// PutCounterInfo stores cs as its content-addressed object in st (once per
// store and process) and returns its sum. An object already there with
// other bytes than its name promises is replaced.
func PutCounterInfo(ctx context.Context, st storage.Store, cs sim.CounterInfos) (string, error) {
	data, sum := EncodeCounterInfo(cs)
	wk := st.URL() + " " + sum
	counterObjects.Lock()
	done := counterObjects.written[wk]
	counterObjects.Unlock()
	if done {
		return sum, nil
	}
	key := storage.CounterInfoKey(sum)
	created, err := st.PutIfAbsent(ctx, key, data)
	if err != nil {
		return "", fmt.Errorf("storing counter descriptions: %w", err)
	}
	if !created {
		got, err := st.Get(ctx, key)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return "", fmt.Errorf("checking counter descriptions: %w", err)
		}
		if !bytes.Equal(got, data) {
			if err := st.Put(ctx, key, data); err != nil {
				return "", fmt.Errorf("repairing counter descriptions %s: %w", key, err)
			}
		}
	}
	cacheCounterInfo(sum, data, cs)
	counterObjects.Lock()
	if len(counterObjects.written) >= maxCachedCounterInfo {
		clear(counterObjects.written)
	}
	counterObjects.written[wk] = true
	counterObjects.Unlock()
	return sum, nil
}

// errBadCounterInfo is a counter description object that cannot be used:
// a malformed reference, an object missing, not hashing to its name, or
// not descriptions. The record is still a result; its counters show their
// raw names.
var errBadCounterInfo = errors.New("counter descriptions unusable")

// GetCounterInfo returns the counter descriptions stored under sum,
// checked against it, from the process's cache after the first read. An
// error wrapping errBadCounterInfo means the object is unusable (missing,
// altered, malformed); any other is the store's.
func GetCounterInfo(ctx context.Context, st storage.Store, sum string) (sim.CounterInfos, error) {
	counterObjects.Lock()
	cs, ok := counterObjects.info[sum]
	counterObjects.Unlock()
	if ok {
		return cs, nil
	}
	if !validSum(sum) {
		return nil, fmt.Errorf("%w: reference %q is not a sha256", errBadCounterInfo, sum)
	}
	key := storage.CounterInfoKey(sum)
	data, err := st.Get(ctx, key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, fmt.Errorf("%w: %s is missing", errBadCounterInfo, key)
	case err != nil:
		return nil, err
	}
	if s := sha256.Sum256(data); hex.EncodeToString(s[:]) != sum {
		return nil, fmt.Errorf("%w: %s does not hash to its name", errBadCounterInfo, key)
	}
	if err := json.Unmarshal(data, &cs); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errBadCounterInfo, key, err)
	}
	cacheCounterInfo(sum, data, cs)
	return cs, nil
}

// CounterInfoObject is the stored object of the counter descriptions with
// sum, as this process read or wrote it (false if it has not): what an
// archive of a campaign carries beside the records that refer to it.
func CounterInfoObject(sum string) (Object, bool) {
	counterObjects.Lock()
	defer counterObjects.Unlock()
	data, ok := counterObjects.data[sum]
	return Object{Key: storage.CounterInfoKey(sum), Data: data}, ok
}

func validSum(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// resolveCounterInfo puts the counter descriptions r refers to back into
// r. An unusable object leaves them out (the counters show their raw
// names: descriptions are metadata, never part of the result); a store
// error is returned, as for the record itself.
func resolveCounterInfo(ctx context.Context, st storage.Store, r *Record) error {
	if r == nil || r.CounterInfoRef == "" || len(r.CounterInfo) > 0 {
		return nil
	}
	cs, err := GetCounterInfo(ctx, st, r.CounterInfoRef)
	if errors.Is(err, errBadCounterInfo) {
		return nil
	}
	r.CounterInfo = cs
	return err
}
