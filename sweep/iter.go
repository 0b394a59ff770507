package sweep

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/msjfarm/msjfarm/model/workload"
)

// A campaign of 10^7 tasks does not fit in memory as a []Task (a task is
// a few hundred bytes, more as JSON), so a planned campaign (Plan) keeps
// only what generates them: the validated axes and policy variants. Every
// task is a function of (scenario, policy variant, replication) — its
// seed is derived from the campaign seed and the scenario (deriveSeed) —
// so the tasks are generated again wherever they are needed, in the same
// order, and the manifest records their number and the hash of their ids
// (TaskListHash) instead of listing them.

// plan is what a campaign's tasks are generated from.
type plan struct {
	cat   Catalog
	base  workload.Spec
	trace *TraceRef
	axes  []axis
	pols  []variant

	mu sync.Mutex
	// cached are the tasks of scenario cachedAt (TaskAt), so that reading
	// the tasks in order generates each scenario once.
	cachedAt int
	cached   []Task
}

// walk calls fn with the axis values of every scenario, in order.
func (c *Campaign) walk(fn func(vals map[string]any) error) error {
	var rec func(i int, vals map[string]any) error
	rec = func(i int, vals map[string]any) error {
		if i == len(c.axes) {
			return fn(vals)
		}
		for _, step := range c.axes[i].values {
			for j, n := range c.axes[i].names {
				vals[n] = step[j]
			}
			if err := rec(i+1, vals); err != nil {
				return err
			}
		}
		return nil
	}
	return rec(0, map[string]any{})
}

// Len is the number of tasks of the campaign (as expanded: the
// replications a precision campaign adds are not counted).
func (c *Campaign) Len() int {
	if c.File == nil {
		return len(c.Tasks)
	}
	return c.Points * c.File.Replications
}

// Each calls fn with every task of the campaign, in Expand's order,
// generating them (Tasks, when set, is not read). An error from fn stops
// the iteration and is returned.
func (c *Campaign) Each(fn func(Task) error) error {
	if c.File == nil || c.pols == nil {
		for _, t := range c.Tasks {
			if err := fn(t); err != nil {
				return err
			}
		}
		return nil
	}
	return c.walk(func(vals map[string]any) error {
		return c.addPoint(c.File, c.cat, c.base, c.trace, vals, c.pols, fn)
	})
}

// TaskAt returns task i (0 ≤ i < Len) of the campaign. The tasks of the
// last scenario read are kept, so reading them in order costs one
// generation per scenario; it is safe for concurrent use.
func (c *Campaign) TaskAt(i int) (Task, error) {
	if i < 0 || i >= c.Len() {
		return Task{}, fmt.Errorf("task %d of %d", i, c.Len())
	}
	if c.Tasks != nil {
		return c.Tasks[i], nil
	}
	per := len(c.pols) * c.File.Replications
	s := i / per
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cached == nil || c.cachedAt != s {
		// The axis values of scenario s: its digits in the mixed radix of
		// the axes' lengths, the last axis varying fastest (walk).
		vals := map[string]any{}
		rest := s
		for a := len(c.axes) - 1; a >= 0; a-- {
			n := len(c.axes[a].values)
			step := c.axes[a].values[rest%n]
			rest /= n
			for j, name := range c.axes[a].names {
				vals[name] = step[j]
			}
		}
		tasks := make([]Task, 0, per)
		if err := c.addPoint(c.File, c.cat, c.base, c.trace, vals, c.pols, func(t Task) error {
			tasks = append(tasks, t)
			return nil
		}); err != nil {
			return Task{}, err
		}
		c.cached, c.cachedAt = tasks, s
	}
	return c.cached[i%per], nil
}

// TaskListHash is the hex SHA-256 of the campaign's task ids in order, one
// per line ("<id>\n"): what the manifest records instead of the list.
func (c *Campaign) TaskListHash() (string, error) {
	h := sha256.New()
	buf := make([]byte, 0, 32)
	if err := c.Each(func(t Task) error {
		buf = append(append(buf[:0], t.ID...), '\n')
		h.Write(buf)
		return nil
	}); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// seedDeriver is deriveSeed for one scenario, with the scenario's JSON
// encoded once: the bytes hashed are those json.Marshal gives for the
// map deriveSeed hashes (keys in sorted order: replication, scenario,
// seed), assembled around the encoded scenario.
type seedDeriver struct {
	head []byte // `{"replication":`
	tail []byte // `,"scenario":<scenario>,"seed":<campaign seed>}`
	buf  []byte
}

// newSeedDeriver takes the scenario's JSON encoding.
func newSeedDeriver(campaignSeed uint64, scenario json.RawMessage) *seedDeriver {
	tail := append([]byte(`,"scenario":`), scenario...)
	tail = append(tail, `,"seed":`...)
	tail = strconv.AppendUint(tail, campaignSeed, 10)
	tail = append(tail, '}')
	return &seedDeriver{head: []byte(`{"replication":`), tail: tail}
}

func (d *seedDeriver) seed(rep int) uint64 {
	d.buf = append(d.buf[:0], d.head...)
	d.buf = strconv.AppendInt(d.buf, int64(rep), 10)
	d.buf = append(d.buf, d.tail...)
	s := sha256.Sum256(d.buf)
	return binary.BigEndian.Uint64(s[:8])
}

// idHasher is TaskID for the replications of one point: the task's JSON
// is encoded once with replication and seed 0 and the two numbers are
// spliced in, which gives the bytes json.Marshal gives for the task
// (fields in declaration order: id, point, scenario, replication, seed,
// ...).
type idHasher struct {
	head, tail []byte
	buf        []byte
}

var zeroRepSeed = []byte(`"replication":0,"seed":0`)

func newIDHasher(tmpl Task) (*idHasher, error) {
	tmpl.ID, tmpl.Replication, tmpl.Seed = "", 0, 0
	b, err := json.Marshal(tmpl)
	if err != nil {
		return nil, err
	}
	i := bytes.Index(b, zeroRepSeed)
	if i < 0 {
		return nil, errors.New("task encoding without replication and seed")
	}
	return &idHasher{head: append(b[:i:i], `"replication":`...), tail: b[i+len(zeroRepSeed):]}, nil
}

func (h *idHasher) id(rep int, seed uint64) string {
	h.buf = append(h.buf[:0], h.head...)
	h.buf = strconv.AppendInt(h.buf, int64(rep), 10)
	h.buf = append(h.buf, `,"seed":`...)
	h.buf = strconv.AppendUint(h.buf, seed, 10)
	h.buf = append(h.buf, h.tail...)
	s := sha256.Sum256(h.buf)
	return hex.EncodeToString(s[:12])
}
