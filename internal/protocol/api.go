package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/msjfarm/msjfarm/sweep"
)

// Request/reply API subjects. Every request and reply is JSON; a reply
// with a non-empty Error field is a failure.
const (
	APISubmit = "msjfarm.api.submit" // SubmitRequest  → SubmitReply
	APIStatus = "msjfarm.api.status" // StatusRequest  → Status
	APICancel = "msjfarm.api.cancel" // StatusRequest  → Status
	APIList   = "msjfarm.api.list"   // {}             → ListReply
)

// TaskMsg is the payload of a task message.
type TaskMsg struct {
	Campaign string     `json:"campaign"`
	Task     sweep.Task `json:"task"`
	// ResultKey is the content key (results/record.Key) under which the
	// coordinator expects the task's result, from the code it expects to
	// run it: a worker that finds a result there references it instead of
	// running the task (another campaign stored it meanwhile).
	ResultKey string `json:"result_key,omitempty"`
	// Store is the identity of the coordinator's store (storage.ID): a
	// worker whose store is another refuses the message and stops, since
	// the coordinator would never read what it stores. Empty from
	// coordinators before it (not checked).
	Store string `json:"store,omitempty"`
}

// Task states in the msjfarm_tasks bucket. A task without an entry is
// queued (or not yet published).
const (
	StateRunning  = "running"
	StateRetrying = "retrying" // failed an attempt, Nak'd with a delay
	StateReleased = "released" // a stopping worker gave it back
	StateDone     = "done"
	StateFailed   = "failed"
	// StateRejected: a worker refused the task's message because its
	// content does not match its id (DecodeTaskMsg); Error names the
	// message. The coordinator reports it in the campaign's status.
	StateRejected = "rejected"
)

// TaskState is the value of a msjfarm_tasks entry.
type TaskState struct {
	State   string `json:"state"`
	Worker  string `json:"worker,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	Error   string `json:"error,omitempty"`
	// Crash is how the plugin process ended when an attempt crashed it
	// ("exit status 2: panic: ..."), and CrashShared whether it ran other
	// replications then, carried into the next attempt's running state:
	// that attempt runs in a process of its own if the crash was shared,
	// and if it crashes the same way, fails the task (the seed reproduces
	// the crash) instead of spending the remaining deliveries.
	Crash       string    `json:"crash,omitempty"`
	CrashShared bool      `json:"crash_shared,omitempty"`
	Updated     time.Time `json:"updated"`
}

// Campaign states.
const (
	CampaignRunning   = "running"
	CampaignDone      = "done"
	CampaignCancelled = "cancelled"
)

// CampaignState is the value of a msjfarm_campaigns entry: enough for a
// restarted coordinator to resume the campaign.
type CampaignState struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	State    string    `json:"state"`
	Total    int       `json:"total"`
	Points   int       `json:"points"`
	Created  time.Time `json:"created"`
	Finished time.Time `json:"finished,omitzero"`
	Done     int       `json:"done,omitempty"`   // counts when finished
	Failed   int       `json:"failed,omitempty"` // (running campaigns: see Status)
	// Epoch counts the coordinator's publishing rounds (see MsgID).
	Epoch int `json:"epoch"`
	// SpecKey is where the campaign's sweep spec is in storage (SpecKey,
	// PutSpec): the entry stays small whatever the sweep's size, and the
	// workers that read it every second to see a cancellation read a few
	// hundred bytes.
	SpecKey string `json:"spec_key,omitempty"`
	// Spec is the spec itself: written inline by coordinators before
	// SpecKey (still read, so that their running campaigns resume), and
	// held in memory by the coordinator; never written any more.
	Spec *sweep.File `json:"spec,omitempty"`
	// Verify is the campaign's spot-verification fraction (sweep.File.Verify
	// or the submitter's --verify; VerifyStatus): not part of the spec, hence
	// of the campaign id, since it changes no result.
	Verify float64 `json:"verify,omitempty"`
	// Store is the identity (storage.ID) of the store the campaign runs
	// on: a coordinator on another store does not resume it.
	Store string `json:"store,omitempty"`
}

// SubmitRequest submits (or resumes) a campaign.
type SubmitRequest struct {
	// Spec is the sweep, inline: for a sweep whose request fits in a NATS
	// message (msjfarm submit sends it so when it does).
	Spec *sweep.File `json:"spec,omitempty"`
	// SpecKey, instead of Spec, is where the submitter stored the sweep
	// (PutSpec): any size.
	SpecKey string `json:"spec_key,omitempty"`
	// RetryFailed deletes the failed records of a resubmitted campaign so
	// that their tasks run again.
	RetryFailed bool `json:"retry_failed,omitempty"`
	// Pins are the plugin pins the submitter wrote for this campaign
	// (worker.PinCampaign): the coordinator validates the sweep against
	// their schemas, since the campaign id it would read them by comes out
	// of that very validation.
	Pins map[string]PluginPin `json:"pins,omitempty"`
	// Verify is the fraction of tasks re-run on another worker and
	// compared bit for bit (sweep.File.Verify, overridden by --verify).
	Verify float64 `json:"verify,omitempty"`
	// KeepVerify says that the submitter was given no fraction (neither
	// the sweep file's verify nor --verify): a campaign submitted before
	// keeps the fraction it has instead of Verify's 0. A resubmission to
	// resume a campaign turned its verification off without a word.
	KeepVerify bool `json:"keep_verify,omitempty"`
	// Store is the identity (storage.ID) of the store the submitter
	// staged the spec, trace and pins in (its --storage; "" without one):
	// the coordinator refuses a submission staged in a store that is not
	// its own.
	Store string `json:"store,omitempty"`
}

// SubmitReply answers a SubmitRequest.
type SubmitReply struct {
	Campaign    string `json:"campaign"`
	Name        string `json:"name"`
	Tasks       int    `json:"tasks"`
	Points      int    `json:"points"`
	Published   int    `json:"published"`    // newly published task messages
	AlreadyDone int    `json:"already_done"` // tasks with a result (or failure record) in storage before publishing, Reused included
	Reused      int    `json:"reused"`       // of AlreadyDone: results stored by other campaigns, referenced now
	Queued      int    `json:"queued"`       // tasks already waiting in the stream
	// Publishing counts the tasks still being published when the reply
	// was sent: a campaign too large to publish within the request (10^7
	// tasks) is answered with the progress so far and published on in
	// the background (a restarted coordinator resumes it).
	Publishing int      `json:"publishing,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
	// Verify is the campaign's spot-verification fraction after this
	// submission (the request's, or the one kept by KeepVerify).
	Verify float64 `json:"verify,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// StatusRequest names a campaign.
type StatusRequest struct {
	Campaign string `json:"campaign"`
}

// Status is a campaign's progress.
type Status struct {
	Campaign string    `json:"campaign"`
	Name     string    `json:"name,omitempty"`
	State    string    `json:"state"`
	Total    int       `json:"total"`
	Done     int       `json:"done"`
	Failed   int       `json:"failed"`
	Running  int       `json:"running"`
	Queued   int       `json:"queued"`
	Created  time.Time `json:"created,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	// Errors are up to ten errors of failed tasks ("<task>: <error>").
	Errors []string `json:"errors,omitempty"`
	// Rejected are up to ten task messages workers refused since the
	// coordinator started (content not matching the task id: forged or
	// corrupted), each naming the message; the tasks themselves are
	// re-published from the campaign.
	Rejected []string `json:"rejected,omitempty"`
	// RejectedTotal counts every refused message (Rejected lists ten).
	RejectedTotal int `json:"rejected_total,omitempty"`
	// Malformed are up to ten task messages on the campaign's subjects
	// that do not decode at all (a worker terminated each), each named
	// by its subject, stream sequence, size, publication time and the
	// decode error clipped, never by its content; MalformedTotal counts
	// those the coordinator keeps (the farm's latest MalformedSlots).
	// The list entry "no-campaign" (coordinator.NoCampaign) has the
	// ones whose subject names no campaign the coordinator knows, and
	// the farm's total.
	Malformed      []string `json:"malformed,omitempty"`
	MalformedTotal int      `json:"malformed_total,omitempty"`
	// Verify is the campaign's spot verification (nil: not asked for).
	Verify *VerifyStatus `json:"verify,omitempty"`
	// Finalising is why a campaign whose tasks are all finished is not
	// done yet: its last finalisation failed (the summary, manifest or
	// report could not be written), and how often in a row; "" when none
	// failed.
	Finalising string `json:"finalising,omitempty"`
	// Reconciling is why a running campaign's missing tasks are not
	// queued: its last reconcile failed (storage could not be listed, or
	// the NATS server refused the task messages: its JetStream store
	// full, a subject the coordinator may not publish to), and how often
	// in a row; "" when the last one succeeded.
	Reconciling string `json:"reconciling,omitempty"`
	// Paused are the workers whose heartbeats say their store is
	// unavailable (each paused: no new task, its finished results held),
	// one line each, for a running campaign: the progress read "0
	// running, ETA 5s" for minutes while every worker waited.
	Paused []string `json:"paused,omitempty"`
	// Elsewhere says why a campaign still running on another store than
	// the coordinator's is not run by it, or that a finished or cancelled
	// one's entry names another store, its figures not checked against a
	// manifest; the lists of unusable entries, unknown campaigns and
	// malformed messages say there what is wrong ("" otherwise).
	Elsewhere string `json:"elsewhere,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Problems say why a running campaign does not move, one line each: it
// belongs to another store, its summary cannot be written, its missing
// tasks cannot be queued, workers are paused on their store, workers
// refuse its task messages, or terminate ones that do not decode (the
// first ten of each, then how many more). `msjfarm status` prints them under the
// campaign and the live page lists them.
func (s *Status) Problems() []string {
	var out []string
	for _, why := range []string{s.Elsewhere, s.Finalising, s.Reconciling} {
		if why != "" {
			out = append(out, why)
		}
	}
	out = append(out, s.Paused...)
	out = append(out, s.Rejected...)
	if more := s.RejectedTotal - len(s.Rejected); more > 0 {
		out = append(out, fmt.Sprintf("… and %d more task messages refused", more))
	}
	out = append(out, s.Malformed...)
	if more := s.MalformedTotal - len(s.Malformed); more > 0 {
		out = append(out, fmt.Sprintf("… and %d more malformed task messages", more))
	}
	return out
}

// Finished reports whether every task is done or failed.
func (s *Status) Complete() bool { return s.Total > 0 && s.Done+s.Failed >= s.Total }

// ListReply lists the campaigns the coordinator knows.
type ListReply struct {
	Campaigns []Status `json:"campaigns"`
	Error     string   `json:"error,omitempty"`
}

// ErrNoCoordinator is returned by Request when nobody answers the API.
var ErrNoCoordinator = errors.New("no coordinator is listening (start `msjfarm coordinator`)")

// RequestRetry is Request, retried every 500 ms while no coordinator is
// listening (one may be starting), until ctx ends.
//
// onWait, if set, is called once, when the first request finds no
// coordinator: a submit with no coordinator running waited its five
// minutes in silence.
func RequestRetry(ctx context.Context, nc *nats.Conn, subject string, req, reply any, onWait func()) error {
	for {
		err := Request(ctx, nc, subject, req, reply)
		if !errors.Is(err, ErrNoCoordinator) {
			return err
		}
		if onWait != nil {
			onWait()
			onWait = nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Request sends a JSON request and decodes the JSON reply into reply; a
// reply whose "error" field is set is returned as an error too.
func Request(ctx context.Context, nc *nats.Conn, subject string, req, reply any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	msg, err := nc.RequestWithContext(ctx, subject, data)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return fmt.Errorf("%s: %w", subject, ErrNoCoordinator)
		}
		return fmt.Errorf("%s: %w", subject, err)
	}
	if err := json.Unmarshal(msg.Data, reply); err != nil {
		return fmt.Errorf("%s: bad reply: %w", subject, err)
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(msg.Data, &e) == nil && e.Error != "" {
		return errors.New(e.Error)
	}
	return nil
}

// LiveRun is what `msjfarm run` stores at LiveRunKey(campaign) while it
// runs the campaign, so that `msjfarm status` in another terminal finds
// the run's embedded NATS server (listening on 127.0.0.1) and asks it; it
// is deleted when the run ends. A stale one (the process was killed) is
// recognised by its URL not answering.
type LiveRun struct {
	Campaign string    `json:"campaign"`
	NATSURL  string    `json:"nats_url"`
	PID      int       `json:"pid"`
	Host     string    `json:"host"`
	Started  time.Time `json:"started"`
	// TokenFile holds the embedded server's token, readable by the run's
	// user only (a file in its private scratch directory): the server
	// accepted anyone on the machine, and the store advertised it, so any
	// local user could submit a campaign (with the run's S3 keys) or
	// cancel one.
	TokenFile string `json:"token_file,omitempty"`
}

// LiveRunKey is the storage key of a campaign's LiveRun.
func LiveRunKey(campaign string) string { return "runs/" + campaign + ".json" }
