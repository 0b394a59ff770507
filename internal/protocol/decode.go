package protocol

import (
	"encoding/json"
	"fmt"

	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// TaskIntegrityError is a task message whose content does not match its
// identity: the task does not hash to its id, or the message is on another
// task's subject. Anyone who can publish on the task subjects could
// otherwise have a worker run altered work and store its result as the
// campaign's; a worker refuses such a message and reports it (StateRejected).
type TaskIntegrityError struct {
	Subject string
	Reason  string
}

func (e *TaskIntegrityError) Error() string {
	return fmt.Sprintf("task message on %s rejected: %s", e.Subject, e.Reason)
}

// DecodeTaskMsg decodes and checks a task message received on subject: it
// names a campaign and a task, the task's content hashes to its id
// (sweep.TaskID), and the subject is that campaign's and task's. A message
// that fails the last two checks is returned with a *TaskIntegrityError, so
// that the receiver can report which task it claimed to be.
func DecodeTaskMsg(subject string, data []byte) (*TaskMsg, error) {
	var tm TaskMsg
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, fmt.Errorf("malformed task message on %s: %w", subject, err)
	}
	if tm.Campaign == "" || tm.Task.ID == "" {
		return nil, fmt.Errorf("malformed task message on %s: no campaign or task id", subject)
	}
	if c, t, ok := ParseTaskSubject(subject); !ok || c != tm.Campaign || t != tm.Task.ID {
		return &tm, &TaskIntegrityError{Subject: subject,
			Reason: fmt.Sprintf("it names task %s of campaign %s, not the subject's", tm.Task.ID, tm.Campaign)}
	}
	if tm.ResultKey != "" && !storage.LowerHex(tm.ResultKey, 32) {
		// A content key is 32 lower-case hex digits: a one-character
		// key made every worker that drew the message panic (a poison
		// message for the farm, sent by anyone who may publish).
		return &tm, &TaskIntegrityError{Subject: subject,
			Reason: fmt.Sprintf("its result_key %.40q is not a content key (32 lower-case hex digits)", tm.ResultKey)}
	}
	if id := sweep.TaskID(tm.Task); id != tm.Task.ID {
		return &tm, &TaskIntegrityError{Subject: subject,
			Reason: fmt.Sprintf("its task content hashes to %q, not to its id %s (forged, corrupted, or from another msjfarm version)", id, tm.Task.ID)}
	}
	return &tm, nil
}
