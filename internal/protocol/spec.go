package protocol

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// A campaign's sweep spec lives in storage, content-addressed like the
// results, and the NATS messages and KV entries that concern the campaign
// carry its key: a NATS message (and so a KV value) holds at most the
// server's max_payload, 1 MB by default, and a sweep of 10^5 explicit load
// values is 1.7 MB of YAML. The spec is the JSON encoding of sweep.File,
// the same bytes that used to travel inline, so what the coordinator reads
// back is exactly what the submitter parsed.

// SpecsPrefix is where specs are stored, under the sha256 of their bytes.
const SpecsPrefix = "specs/"

// SpecKey is the storage key of a spec whose JSON has this sha256 (hex).
func SpecKey(sum string) string { return SpecsPrefix + sum + ".json" }

// PutSpec stores f's JSON at its content key and returns the key. Storing
// the same spec twice writes the same object.
func PutSpec(ctx context.Context, st storage.Store, f *sweep.File) (string, error) {
	data, err := json.Marshal(f)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	key := SpecKey(hex.EncodeToString(sum[:]))
	if _, err := st.Stat(ctx, key); err == nil {
		return key, nil
	}
	if err := st.Put(ctx, key, data); err != nil {
		return "", fmt.Errorf("storing the sweep spec: %w", err)
	}
	return key, nil
}

// GetSpec reads the spec stored at key and checks that its bytes hash to
// the key: a spec that was replaced or truncated in storage is an error,
// never another campaign.
func GetSpec(ctx context.Context, st storage.Store, key string) (*sweep.File, error) {
	sum, okPrefix := strings.CutPrefix(key, SpecsPrefix)
	sum, okSuffix := strings.CutSuffix(sum, ".json")
	if _, err := hex.DecodeString(sum); !okPrefix || !okSuffix || len(sum) != 64 || err != nil {
		return nil, fmt.Errorf("spec key %q: not %s<sha256>.json", key, SpecsPrefix)
	}
	data, err := st.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("reading the sweep spec %s: %w", key, err)
	}
	got := sha256.Sum256(data)
	if hex.EncodeToString(got[:]) != sum {
		return nil, fmt.Errorf("sweep spec %s: its content hashes to %x, not to its key (modified in storage)", key, got)
	}
	var f sweep.File
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("sweep spec %s: %w", key, err)
	}
	return &f, nil
}
