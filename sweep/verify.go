package sweep

import (
	"encoding/binary"
	"fmt"
	"math"

	"crypto/sha256"
)

// CheckVerify validates a spot-verification fraction (File.Verify, or the
// --verify flag that overrides it): the share of tasks re-run on a second
// worker, a number in [0, 1].
func CheckVerify(f float64) error {
	if math.IsNaN(f) || f < 0 || f > 1 {
		return fmt.Errorf("verify: must be a fraction in [0, 1] (the share of tasks re-run on another worker and compared bit for bit, e.g. verify: 0.01), got %v", f)
	}
	return nil
}

// Sampled reports whether spot verification at fraction f re-runs task
// tid of a campaign with seed campaignSeed: the first 8 bytes of
// sha256("msjfarm-verify", seed, task id), read as a fraction of 2^64, are
// below f. The choice depends on nothing else, so a resumed or re-run
// campaign samples the same tasks and the expected sample is f of the
// tasks. It is reproducible, not secret: whoever knows the campaign's seed
// (a worker can read the spec from storage) can tell which tasks will be
// checked (docs/security.md says what that leaves open).
func Sampled(f float64, campaignSeed uint64, tid string) bool {
	switch {
	case f <= 0:
		return false
	case f >= 1:
		return true
	}
	h := sha256.New()
	h.Write([]byte("msjfarm-verify\x00"))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], campaignSeed)
	h.Write(b[:])
	h.Write([]byte(tid))
	u := binary.BigEndian.Uint64(h.Sum(nil)[:8])
	return float64(u>>11)/(1<<53) < f
}
