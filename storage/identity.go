package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// IDKey holds the store's identity (ID).
const IDKey = "store-id"

// A store's identity. A coordinator and its workers must use one store:
// a worker that stores elsewhere than its coordinator reads computes every
// task for nothing (the coordinator finds no result and publishes the task
// again), and a standby coordinator on another store took over a farm
// whose results it could not see. URLs cannot tell: one MinIO reached by
// two host names, or one directory by a symbolic link or a mount on two
// machines, is one store under two URLs, and two buckets under one
// endpoint name on two networks are two. So the store names itself: the
// first process that asks writes a random identity under IDKey
// (PutIfAbsent, so concurrent first askers agree), and every process that
// reaches the store reads the same one. A copy of a store's objects (cp -r,
// mc mirror) copies its identity: a copy is not told from its original.

// ID returns the store's identity, creating it on first use: 24 lower-case
// hex digits. An IDKey object that is not one (written by hand, damaged)
// is an error naming it; the identity is never silently replaced, since
// every process using the store compares it.
func ID(ctx context.Context, st Store) (string, error) {
	id, err := ReadID(ctx, st)
	if !errors.Is(err, ErrNotFound) {
		return id, err
	}
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	if _, err := st.PutIfAbsent(ctx, IDKey, []byte(hex.EncodeToString(b[:])+"\n")); err != nil {
		return "", fmt.Errorf("storage %s: writing its identity (%s): %w", st.URL(), IDKey, err)
	}
	return ReadID(ctx, st) // another process's, if it wrote first
}

// ReadID reads the store's identity without making one: ErrNotFound
// (wrapped) when it has none yet, and an error naming the object when it
// is not an identity. An object too large to be one is not read.
func ReadID(ctx context.Context, st Store) (string, error) {
	damaged := func(size int64) error {
		return fmt.Errorf("storage %s: its identity object %q is not 24 hex digits (%d bytes): it was changed by hand or damaged; restore it, or delete it if no coordinator or worker uses this store now", st.URL(), IDKey, size)
	}
	if info, err := st.Stat(ctx, IDKey); err == nil && info.Size > 64 {
		return "", damaged(info.Size)
	}
	data, err := st.Get(ctx, IDKey)
	if err != nil {
		return "", fmt.Errorf("storage %s: reading its identity (%s): %w", st.URL(), IDKey, err)
	}
	id := strings.TrimSuffix(string(data), "\n")
	if !ValidID(id) {
		return "", damaged(int64(len(data)))
	}
	return id, nil
}

// ValidID reports whether id has the form ID returns.
func ValidID(id string) bool { return LowerHex(id, 24) }
