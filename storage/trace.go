package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/msjfarm/msjfarm/model/swf"
)

// Replayed SWF traces are stored by content, like plugin binaries:
//
//	traces/<sha256>    TraceKey: the trace file's bytes as the submitter read them
//
// The submitting client (msjfarm submit or run) uploads a sweep's trace
// here and the tasks name only its sha256, so that no coordinator or
// worker ever opens a path it was sent, and a trace campaign runs on any
// machine that reaches the storage.

// TracesPrefix is the prefix of every stored trace.
const TracesPrefix = "traces/"

// DefaultMaxTraceSize is the default limit on the size of a trace, in
// bytes, wherever one is read: by the submitting client from its disk, by
// the coordinator's check of the stored object, and by a worker's fetch.
// The largest traces of the Parallel Workloads Archive are a few hundred
// MB uncompressed; gzipped ones are far smaller.
const DefaultMaxTraceSize int64 = 512 << 20

// TraceKey is the key of the trace whose content has the hex sha256 sum.
func TraceKey(sum string) string { return TracesPrefix + sum }

// ValidTraceSHA256 reports whether s is a hex sha256 as TraceKey takes it
// (swf.ValidSHA256), so that a key built from a task message can never
// name anything but a trace.
func ValidTraceSHA256(s string) bool { return swf.ValidSHA256(s) }

// TraceSHA256 is the hex sha256 of a trace's content.
func TraceSHA256(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// PutTrace stores a trace's content under its sha256 unless it is already
// there (put-if-absent: concurrent submitters of one trace agree). An
// object already there is read back and compared: one that is not this
// content (corrupt, or tampered with) is replaced by it — safe, since the
// key names the content and every reader verifies it — so that submitting
// again repairs what a worker refused. It returns the sha256 and whether
// this call wrote the object.
func PutTrace(ctx context.Context, st Store, data []byte) (sum string, written bool, err error) {
	sum = TraceSHA256(data)
	key := TraceKey(sum)
	created, err := st.PutIfAbsent(ctx, key, data)
	if err != nil {
		return sum, false, fmt.Errorf("uploading the trace: %w", err)
	}
	if created {
		return sum, true, nil
	}
	if info, err := st.Stat(ctx, key); err == nil && info.Size == int64(len(data)) {
		if have, err := st.Get(ctx, key); err == nil && TraceSHA256(have) == sum {
			return sum, false, nil
		}
	}
	if err := st.Put(ctx, key, data); err != nil {
		return sum, false, fmt.Errorf("replacing the corrupt trace object %s: %w", key, err)
	}
	return sum, true, nil
}

// ErrTraceMissing is returned (wrapped) by CheckTrace when the trace is
// not in storage.
var ErrTraceMissing = errors.New("trace not in storage")

// CheckTrace verifies that the trace with the hex sha256 sum is stored
// with size bytes and that size is within limit (<= 0: no limit). It does
// not read the content: a worker verifies the sha256 of what it fetches.
func CheckTrace(ctx context.Context, st Store, sum string, size, limit int64) error {
	if !ValidTraceSHA256(sum) {
		return fmt.Errorf("%q is not a sha256 (64 lowercase hex digits)", sum)
	}
	if limit > 0 && size > limit {
		return fmt.Errorf("the trace has %d bytes, more than the limit of %d", size, limit)
	}
	info, err := st.Stat(ctx, TraceKey(sum))
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: %s has no object %s (msjfarm submit and run upload the trace file there)", ErrTraceMissing, st.URL(), TraceKey(sum))
	}
	if err != nil {
		return err
	}
	if info.Size != size {
		return fmt.Errorf("%s in %s has %d bytes, the sweep says %d", TraceKey(sum), st.URL(), info.Size, size)
	}
	return nil
}
