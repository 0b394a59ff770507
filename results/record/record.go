// Package record is the stored result of one task: the replication record
// a worker writes to storage and the coordinator, the aggregator, the
// archive and msjfarm reproduce read. A result is stored once under its
// content key and campaigns refer to it (store.go, docs/results.md).
//
// It has its own package because it is the contract between the worker
// that writes a result and everything that reads one; before, it lived in
// the statistics aggregator and the worker imported the aggregator just
// for it. It imports sweep (the task it answers) and sim (the result);
// the metric table the summaries compute from a record is in the sibling
// package results/metric, which sweep imports (so it cannot be here).
package record

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
)

// Record is the stored result object of one task. Exactly one of Result
// and Error is set: a task that failed (plugin crash, deadline, invalid
// parameters) is recorded with its error so that a resumed campaign does
// not retry it forever and the summary can count it.
type Record struct {
	Task       sweep.Task  `json:"task"`
	Result     *sim.Result `json:"result,omitempty"`
	Provenance Provenance  `json:"provenance,omitzero"`
	Error      string      `json:"error,omitempty"`
	// CounterInfo is the policy's description of the result's counters
	// (label, unit, kind; sim.CounterDescriber), as the worker read it
	// from the plugin's Info (checked there) or the built-in policy. It is
	// metadata for outputs, not part of the result: absent in records
	// written before it existed and for policies that describe nothing,
	// whose counters then show their raw names.
	CounterInfo sim.CounterInfos `json:"counter_info,omitempty"`
	// CounterInfoRef is the sha256 (hex) of the stored object that holds
	// CounterInfo (storage.CounterInfoKey; counters.go): Store moves the
	// descriptions out of the record into that one object, shared by every
	// record of policies that describe their counters alike, and readers
	// (Read, ReadObjects, ReadMany) put them back, fetching each object
	// once per process. Records written before it carry CounterInfo
	// inline, and are read as they are.
	CounterInfoRef string `json:"counter_info_ref,omitempty"`
}

// Failed reports whether the record is a failure: an error, or no result.
func (r *Record) Failed() bool { return r.Error != "" || r.Result == nil }

// Provenance says where and by which code a record was produced. Every
// field is optional (a failure recorded by the coordinator has only
// RecordedBy, Host and Deliveries).
//
// The JSON form is an object of strings (numbers and times are quoted):
// it was a map[string]string before this type existed, so records written
// by earlier versions decode into it and earlier readers still decode new
// ones.
type Provenance struct {
	// Runner is how the replication ran: "in-process" or "plugin".
	Runner string `json:"runner,omitempty"`
	// Plugin, PluginVersion and PluginSHA256 name the code that ran the
	// policy: the plugin (or "builtin") name and version and the sha256 of
	// the executable (the plugin binary, or the msjfarm executable for
	// in-process runs).
	Plugin        string `json:"plugin,omitempty"`
	PluginVersion string `json:"plugin_version,omitempty"`
	PluginSHA256  string `json:"plugin_sha256,omitempty"`
	// Builtin marks a plugin run of a built-in family served by msjfarm
	// itself (its hidden serve subcommand): the same policy code as an
	// in-process run, so the result is filed as a built-in one.
	Builtin bool `json:"builtin,omitempty,string"`
	// Engine is the sim.Version the policy linked.
	Engine string `json:"engine,omitempty"`
	// MsjfarmVersion is the sim.Version of the worker that stored it.
	MsjfarmVersion string `json:"msjfarm_version,omitempty"`
	// Host and Worker are the machine and the worker name that stored it.
	Host   string `json:"host,omitempty"`
	Worker string `json:"worker,omitempty"`
	// RecordedBy is "coordinator" for a failure the coordinator recorded
	// after the task ran out of deliveries (empty when a worker wrote it).
	RecordedBy string `json:"recorded_by,omitempty"`
	// Attempt is the delivery that produced the record (1 = first).
	Attempt int `json:"attempt,omitempty,string"`
	// Deliveries is the number of deliveries of a task the coordinator
	// recorded as failed.
	Deliveries int `json:"deliveries,omitempty,string"`
	// Started is when the attempt started (UTC).
	Started time.Time `json:"started,omitzero"`
	// WallSeconds is the attempt's wall-clock time, CPUSeconds the CPU
	// time of the replication alone (0 if unknown), both in seconds
	// rounded to the microsecond.
	WallSeconds float64 `json:"wall_seconds,omitempty,string"`
	CPUSeconds  float64 `json:"cpu_seconds,omitempty,string"`
}

// Seconds is d in seconds rounded to the microsecond, the resolution of
// WallSeconds and CPUSeconds.
func Seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1e6) / 1e6 }

// IntegrityError is a stored record that does not answer the task it is
// stored for: its task's id is another, or its task's content does not
// hash to the id (altered, or from another msjfarm version). Aggregation
// must not count it: it is not a result of the campaign's task.
type IntegrityError struct {
	Task   string // the task the record is stored for
	Reason string
	// Key is the storage object at fault (set by Read): the campaign's
	// entry, or the stored result its reference names.
	Key string
}

func (e *IntegrityError) Error() string {
	return fmt.Sprintf("result of task %s: %s", e.Task, e.Reason)
}

// Decode reads a stored record and checks that it answers task: it is
// JSON of a Record whose task has id task and whose task content hashes
// to it (sweep.TaskID), so that the task hash it carries is the one the
// campaign asked for. A record that fails the checks is returned with an
// *IntegrityError; a record that is not JSON of a Record is an error.
func Decode(data []byte, task string) (*Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("result of task %s: %w", task, err)
	}
	switch {
	case r.Task.ID != task:
		return &r, &IntegrityError{Task: task, Reason: fmt.Sprintf("the record is of task %q", r.Task.ID)}
	case sweep.TaskID(r.Task) != task:
		return &r, &IntegrityError{Task: task, Reason: "the record's task content does not hash to its id"}
	}
	return &r, nil
}
