package protocol

import "time"

// Worker heartbeats: every worker publishes a Heartbeat on
// HeartbeatSubject(<worker>) every HeartbeatInterval (core NATS, not
// JetStream: a missed one is harmless, the next replaces it). They carry
// what the task-state bucket cannot say — host, slots, lifetime counts — for
// the live campaign page's worker table (package monitor).
const (
	HeartbeatPrefix   = "msjfarm.heartbeat."
	HeartbeatWildcard = HeartbeatPrefix + ">"
	HeartbeatInterval = 2 * time.Second
)

// HeartbeatSubject is the subject a worker's heartbeats are published on.
func HeartbeatSubject(worker string) string { return HeartbeatPrefix + SubjectToken(worker) }

// SubjectToken makes s usable as one subject token ('.', '*', '>' and
// whitespace become '_').
func SubjectToken(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch c {
		case '.', '*', '>', ' ', '\t', '\r', '\n':
			b[i] = '_'
		}
	}
	return string(b)
}

// Heartbeat is a worker's periodic report of itself.
type Heartbeat struct {
	Worker  string    `json:"worker"`
	Host    string    `json:"host"`
	Slots   int       `json:"slots"`
	Running int       `json:"running"`
	Done    int64     `json:"done"`
	Failed  int64     `json:"failed"`
	Retried int64     `json:"retried"`
	Started time.Time `json:"started"`
	Sent    time.Time `json:"sent"`
	// Stopping is set on the last heartbeat of a worker that shuts down.
	Stopping bool `json:"stopping,omitempty"`
	// StorageDown is why the worker finds its store unavailable, since
	// StorageDownSince ("" while it is available): it is paused, taking
	// no task and holding its finished results until the store is back.
	StorageDown      string    `json:"storage_down,omitempty"`
	StorageDownSince time.Time `json:"storage_down_since,omitzero"`
}
