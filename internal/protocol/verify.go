package protocol

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// Spot verification (docs/security.md, "Spot verification"). A request to
// re-run a stored task on another worker is a message in the task stream
// under VerifySubjectRoot, so that the workers' one shared consumer
// delivers it like a task; a worker named in Exclude gives it back. The
// result of a verification run goes to VerifyKey, never to the campaign's
// result: a verification run can neither replace nor complete a task.
const VerifySubjectRoot = "msjfarm.verify"

// VerifySubject is the subject of round round (1: the second run of the
// task, 2: the third) of the verification of a task.
func VerifySubject(campaign, task string, round int) string {
	return VerifySubjectRoot + "." + campaign + "." + task + "." + strconv.Itoa(round)
}

// VerifyFilter matches every verification subject of a campaign.
func VerifyFilter(campaign string) string { return VerifySubjectRoot + "." + campaign + ".>" }

// VerifyMsgID is the Nats-Msg-Id of a verification request: try counts
// the coordinator's publications of the same round (a request no worker
// could take is published again) and epoch names the verification they
// belong to (when it started, in Unix nanoseconds). Without the epoch, a
// campaign verified again within the stream's duplicate window (a
// resubmission, a restarted coordinator) published ids already seen, the
// server dropped them silently, and every task was reported "no second
// worker" while a second worker idled.
func VerifyMsgID(campaign, task string, round, try int, epoch int64) string {
	return "verify." + campaign + "." + task + "." + strconv.Itoa(round) + "." + strconv.Itoa(try) + "." + strconv.FormatInt(epoch, 10)
}

// ParseVerifySubject returns the campaign, task and round of a
// verification subject.
func ParseVerifySubject(subject string) (campaign, task string, round int, ok bool) {
	rest, ok := strings.CutPrefix(subject, VerifySubjectRoot+".")
	if !ok {
		return "", "", 0, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return "", "", 0, false
	}
	round, err := strconv.Atoi(parts[2])
	if err != nil || round < 1 {
		return "", "", 0, false
	}
	return parts[0], parts[1], round, true
}

// IsVerifySubject reports whether subject is a verification request's.
func IsVerifySubject(subject string) bool {
	return strings.HasPrefix(subject, VerifySubjectRoot+".")
}

// VerifyMsg asks a worker other than those in Exclude to run Task again
// and store what it gets under VerifyKey(Campaign, Task.ID, Round).
type VerifyMsg struct {
	Campaign string     `json:"campaign"`
	Task     sweep.Task `json:"task"`
	Round    int        `json:"round"`
	// Exclude are the workers (Options.Name) that produced the results
	// being checked: none of them may run this request.
	Exclude []string `json:"exclude"`
	// Store is the coordinator's store, as in TaskMsg.
	Store string `json:"store,omitempty"`
}

// Excludes reports whether worker may not run the request.
func (m *VerifyMsg) Excludes(worker string) bool { return slices.Contains(m.Exclude, worker) }

// DecodeVerifyMsg decodes and checks a verification request as
// DecodeTaskMsg checks a task message: the task hashes to its id and the
// subject is the request's (campaign, task, round).
func DecodeVerifyMsg(subject string, data []byte) (*VerifyMsg, error) {
	var m VerifyMsg
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("malformed verification request on %s: %w", subject, err)
	}
	c, t, r, ok := ParseVerifySubject(subject)
	if !ok || c != m.Campaign || t != m.Task.ID || r != m.Round {
		return nil, &TaskIntegrityError{Subject: subject,
			Reason: fmt.Sprintf("it names round %d of task %s of campaign %s, not the subject's", m.Round, m.Task.ID, m.Campaign)}
	}
	if id := sweep.TaskID(m.Task); id != m.Task.ID {
		return nil, &TaskIntegrityError{Subject: subject,
			Reason: fmt.Sprintf("its task content hashes to %q, not to its id %s", id, m.Task.ID)}
	}
	return &m, nil
}

// VerifyKey is where round round of the verification of a task stores
// its record (a results/record.Record: the result and its provenance, or
// the error of the run).
func VerifyKey(campaign, task string, round int) string {
	return VerifyPrefix(campaign) + task + "." + strconv.Itoa(round) + ".json"
}

// VerifyPrefix holds a campaign's verification records and its
// verification report (VerifyReportKey).
func VerifyPrefix(campaign string) string { return storage.CampaignPrefix(campaign) + "verify/" }

// VerifyReportKey is the campaign's verification report, written when the
// campaign is finalised (JSON of VerifyReport).
func VerifyReportKey(campaign string) string { return storage.CampaignPrefix(campaign) + "verify.json" }

// Verification outcomes of a sampled task.
const (
	VerifyPending    = "pending"
	VerifyOK         = "verified"   // a second worker got the same result bit for bit
	VerifyMajority   = "mismatch"   // two results differed; the third run agreed with one of them
	VerifyNoMajority = "unresolved" // three different results, or no third worker for a mismatch
	VerifyNoSecond   = "unverified" // no second worker took the request in time
	VerifySkipped    = "skipped"    // the task has no result to verify (it failed)
)

// VerifyRun is one run of a sampled task as the verification saw it.
type VerifyRun struct {
	Worker       string `json:"worker"`
	Host         string `json:"host,omitempty"`
	PluginSHA256 string `json:"plugin_sha256,omitempty"`
	// Error is a run that produced no result (its failure, or a result
	// the worker's checks refused).
	Error string `json:"error,omitempty"`
	// Agrees with the result the campaign keeps: the accepted one, or the
	// majority's that replaced it (that run itself: true).
	Agrees bool `json:"agrees"`
}

// VerifyTask is the verification of one sampled task.
type VerifyTask struct {
	Task    string      `json:"task"`
	Outcome string      `json:"outcome"`
	Detail  string      `json:"detail,omitempty"`
	Runs    []VerifyRun `json:"runs,omitempty"` // [0] the accepted result's run
	// Disagreeing are the workers whose result the verification did not
	// accept.
	Disagreeing []string `json:"disagreeing,omitempty"`
	// Nondeterministic names the code (policy, engine, plugin sha256)
	// that gave three different results on three workers: the code, not
	// a worker, is then what disagrees (Disagreeing is empty).
	Nondeterministic string `json:"nondeterministic,omitempty"`
}

// VerifyStatus summarises a campaign's spot verification (Status.Verify).
type VerifyStatus struct {
	Fraction   float64 `json:"fraction"`
	Sampled    int     `json:"sampled"`
	Verified   int     `json:"verified"`
	Pending    int     `json:"pending"`
	Mismatched int     `json:"mismatched"` // VerifyMajority and VerifyNoMajority
	Unverified int     `json:"unverified"`
	Skipped    int     `json:"skipped,omitempty"`
	// Carried counts the sampled tasks that an earlier, larger sample of
	// the campaign verified (it was submitted again with a lower
	// fraction): kept, so that what they found is not lost.
	Carried int `json:"carried,omitempty"`
	// Disagreeing names every worker a verification outvoted or could not
	// clear, with the number of such tasks ("w2 (3 tasks)"), sorted.
	Disagreeing []string `json:"disagreeing,omitempty"`
	// Findings are up to ten mismatch reports, one line each.
	Findings []string `json:"findings,omitempty"`
	// Nondeterministic names the code that gave three different results
	// for one task on three workers (VerifyTask.Nondeterministic), with
	// the number of such tasks, sorted.
	Nondeterministic []string `json:"nondeterministic,omitempty"`
}

// VerifyReport is what VerifyReportKey holds.
type VerifyReport struct {
	Campaign string       `json:"campaign"`
	Status   VerifyStatus `json:"status"`
	Tasks    []VerifyTask `json:"tasks"`
}
