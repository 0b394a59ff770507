package protocol

import (
	"strconv"
	"strings"
	"time"

	"github.com/msjfarm/msjfarm/storage"
)

// Malformed task messages (ones that do not decode at all) are reported
// by the worker that drew them in the msjfarm_tasks bucket, in one of
// MalformedSlots keys (MalformedKey: the message's stream sequence modulo
// MalformedSlots), and the coordinator lists what those keys hold in
// `status`. Anyone who holds the farm's NATS credentials may publish onto
// the task subjects; such a message was terminated and named only in the
// log of the worker that drew it.
//
// Why these keys and not JetStream's termination advisories
// ($JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.<stream>.<consumer>): in
// nats-server v2.15 the advisory carries the stream sequence, the delivery
// count and the Term reason, not the subject, size or publication time,
// and it is sent once the termination has removed the message from the
// work queue, so the coordinator could learn no more than the worker chose
// to put into the reason. It is also sent for every other termination
// (failures, cancellations), so a bounded stream keeping them for a
// coordinator that is down would be flushed by one failing campaign, and
// keeping them at all takes another stream in the layout. The worker
// holds the message when it decides; the bucket is one the workers write
// already, the coordinator replays it when it starts and follows it while
// it runs, and it expires entries after TaskStateTTL. The fixed number of
// keys bounds what a flood leaves on the server and in the coordinator;
// each key counts the messages it recorded (MalformedMsg.N), so the total
// survives a coordinator restart while only the latest ones are kept.
const (
	// MalformedSlots is the number of keys malformed messages are
	// recorded in: at most this many are kept at a time.
	MalformedSlots = 64
	// MalformedKeyPrefix starts their keys in msjfarm_tasks. It is not a
	// campaign id (16 lower-case hex digits), so no task's key is one.
	MalformedKeyPrefix = "malformed."
	// MaxMalformedText bounds the subject and the decode error a record
	// keeps: a subject may be as long as a message, and the error is
	// clipped before it could quote much of the content.
	MaxMalformedText = 256
	// MaxMalformedCount bounds a key's count (MalformedMsg.N), which
	// anyone on NATS may write: the sum of all stays far from overflow.
	MaxMalformedCount = 1 << 40
)

// MalformedMsg is what a worker records of a task message that does not
// decode: where it was, never its content.
type MalformedMsg struct {
	Subject   string    `json:"subject"`   // clipped to MaxMalformedText
	Seq       uint64    `json:"seq"`       // stream sequence in TaskStream
	Size      int       `json:"size"`      // bytes of data
	Published time.Time `json:"published"` // when the stream took it
	Error     string    `json:"error"`     // why it does not decode, clipped to MaxMalformedText
	Worker    string    `json:"worker"`
	Seen      time.Time `json:"seen"` // when the worker drew it
	// N counts the malformed messages recorded in this key in all,
	// this one included.
	N int64 `json:"n"`
}

// MalformedKey is the key a malformed message at stream sequence seq is
// recorded under.
func MalformedKey(seq uint64) string {
	return MalformedKeyPrefix + strconv.FormatUint(seq%MalformedSlots, 10)
}

// MalformedSlot is the slot of a key of MalformedKey's form, ok false for
// any other key.
func MalformedSlot(key string) (slot int, ok bool) {
	rest, ok := strings.CutPrefix(key, MalformedKeyPrefix)
	if !ok || len(rest) > 4 {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || n >= MalformedSlots || MalformedKey(uint64(n)) != key {
		return 0, false
	}
	return n, true
}

// SubjectCampaign is the campaign a task or verification subject names
// (its first token after TaskSubjectRoot or VerifySubjectRoot, if that is
// a campaign id: 16 lower-case hex digits), or "".
func SubjectCampaign(subject string) string {
	rest, ok := strings.CutPrefix(subject, TaskSubjectRoot+".")
	if !ok {
		if rest, ok = strings.CutPrefix(subject, VerifySubjectRoot+"."); !ok {
			return ""
		}
	}
	c, _, _ := strings.Cut(rest, ".")
	if !storage.LowerHex(c, 16) {
		return ""
	}
	return c
}
