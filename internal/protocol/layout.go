// Package protocol is the farm's NATS layer shared by the coordinator, the
// workers and the command line: the JetStream layout (stream, consumer, KV
// buckets, subjects), the wire types, the request/reply API types, client
// connection options (user/password, nkey, creds, TLS) and an embedded
// JetStream server.
//
// Layout (docs/design.md):
//
//	stream  MSJFARM_TASKS       work-queue retention, subjects msjfarm.tasks.<campaign>.<task>,
//	                            one message per task (TaskMsg JSON), Nats-Msg-Id <campaign>.<task>,
//	                            duplicate window DupWindow; also the spot-verification requests,
//	                            msjfarm.verify.<campaign>.<task>.<round> (verify.go)
//	consumer workers            the one durable pull consumer every worker shares: explicit ack,
//	                            AckWait (heartbeated with +WPI while a task runs), MaxDeliver
//	stream  MSJFARM_ADVISORIES  captures $JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.MSJFARM_TASKS.workers
//	                            so an advisory raised while the coordinator is down is not lost
//	consumer coordinator        durable pull consumer on MSJFARM_ADVISORIES
//	KV      msjfarm_campaigns   key <campaign>: CampaignState JSON
//	KV      msjfarm_tasks       key <campaign>.<task>: TaskState JSON (running/retrying/done/failed),
//	                            expiring after TaskStateTTL; keys malformed.<n>: the task messages
//	                            that do not decode, as workers recorded them (MalformedMsg JSON)
//	API     msjfarm.api.submit|status|cancel|list   request/reply, JSON (api.go)
//
// Why one subject per task: the coordinator can ask the stream which tasks of
// a campaign are still queued (StreamInfo with a subject filter) and so never
// publishes a task twice even after the duplicate window has expired.
package protocol

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Names of the JetStream objects.
const (
	TaskStream       = "MSJFARM_TASKS"
	TaskSubjectRoot  = "msjfarm.tasks"
	WorkerConsumer   = "workers"
	AdvisoryStream   = "MSJFARM_ADVISORIES"
	AdvisoryConsumer = "coordinator"
	CampaignBucket   = "msjfarm_campaigns"
	TaskBucket       = "msjfarm_tasks"
	// LeaseBucket holds LeaseKey, the coordinator lease: one coordinator
	// acts on a NATS system at a time (coordinator/lease.go). Its TTL is
	// the lease's: a holder that stops renewing (killed) loses it then.
	LeaseBucket = "msjfarm_coordinator"
	LeaseKey    = "lease"

	// MaxDeliveriesAdvisory is the subject the server publishes on when a
	// task message has been delivered MaxDeliver times without an ack.
	MaxDeliveriesAdvisory = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + TaskStream + "." + WorkerConsumer
)

// Defaults of the layout.
const (
	DefaultAckWait    = 30 * time.Second
	DefaultMaxDeliver = 5
	// DupWindow is the stream's duplicate window. Re-publishing within it is
	// a no-op by message id; beyond it the coordinator's own check (results
	// in storage, KV state, messages still in the stream) prevents duplicates.
	DupWindow = time.Hour
	// TaskStateTTL is how long a task state stays in msjfarm_tasks.
	TaskStateTTL = 30 * 24 * time.Hour
)

// TaskSubject is the subject of one task's message.
func TaskSubject(campaign, task string) string { return TaskSubjectRoot + "." + campaign + "." + task }

// CampaignFilter matches every task subject of a campaign.
func CampaignFilter(campaign string) string { return TaskSubjectRoot + "." + campaign + ".>" }

// MsgID is the Nats-Msg-Id of a task message: campaign, task and the
// campaign's publishing epoch. Campaign, because two campaigns may share a
// task (same content hash); epoch, because a task whose message vanished
// without a result (cancel purges the stream, a retried failure) must be
// publishable again inside the duplicate window. Within one epoch a
// re-publish (client retry, racing reconcile) is a no-op.
func MsgID(campaign, task string, epoch int) string {
	return campaign + "." + task + "." + strconv.Itoa(epoch)
}

// ParseTaskSubject returns the campaign and task of a task subject.
func ParseTaskSubject(subject string) (campaign, task string, ok bool) {
	rest, ok := strings.CutPrefix(subject, TaskSubjectRoot+".")
	if !ok {
		return "", "", false
	}
	campaign, task, ok = strings.Cut(rest, ".")
	return campaign, task, ok && campaign != "" && task != "" && !strings.Contains(task, ".")
}

// TaskKey is the msjfarm_tasks key of a task.
func TaskKey(campaign, task string) string { return campaign + "." + task }

// Layout configures the consumer the workers share.
type Layout struct {
	AckWait    time.Duration // 0: DefaultAckWait
	MaxDeliver int           // 0: DefaultMaxDeliver
	Replicas   int           // stream replicas in a cluster (0: 1)
}

func (l Layout) norm() Layout {
	if l.AckWait <= 0 {
		l.AckWait = DefaultAckWait
	}
	if l.MaxDeliver <= 0 {
		l.MaxDeliver = DefaultMaxDeliver
	}
	if l.Replicas <= 0 {
		l.Replicas = 1
	}
	return l
}

// Handles are the JetStream objects of the layout.
type Handles struct {
	Tasks      jetstream.Stream
	Workers    jetstream.Consumer
	Advisories jetstream.Consumer
	Campaigns  jetstream.KeyValue
	TaskStates jetstream.KeyValue
}

// Setup creates or updates every stream, consumer and bucket of the layout
// (idempotent; the coordinator calls it at start).
func Setup(ctx context.Context, js jetstream.JetStream, l Layout) (*Handles, error) {
	l = l.norm()
	var h Handles
	var err error
	h.Tasks, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        TaskStream,
		Description: "msjfarm tasks: one message per replication",
		Subjects:    []string{TaskSubjectRoot + ".>", VerifySubjectRoot + ".>"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Duplicates:  DupWindow,
		Replicas:    l.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", TaskStream, err)
	}
	h.Workers, err = js.CreateOrUpdateConsumer(ctx, TaskStream, jetstream.ConsumerConfig{
		Durable:       WorkerConsumer,
		Description:   "shared by every msjfarm worker",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       l.AckWait,
		MaxDeliver:    l.MaxDeliver,
		MaxAckPending: -1,
		MaxWaiting:    4096,
	})
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", WorkerConsumer, err)
	}
	_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        AdvisoryStream,
		Description: "max-deliveries advisories of msjfarm tasks",
		Subjects:    []string{MaxDeliveriesAdvisory},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    l.Replicas,
		MaxAge:      7 * 24 * time.Hour,
	})
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", AdvisoryStream, err)
	}
	h.Advisories, err = js.CreateOrUpdateConsumer(ctx, AdvisoryStream, jetstream.ConsumerConfig{
		Durable:   AdvisoryConsumer,
		AckPolicy: jetstream.AckExplicitPolicy,
		AckWait:   30 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", AdvisoryConsumer, err)
	}
	if h.Campaigns, err = kv(ctx, js, CampaignBucket, "msjfarm campaigns", l.Replicas, 0); err != nil {
		return nil, err
	}
	// Task states only speed things up (storage holds the truth), so they
	// expire after TaskStateTTL instead of growing forever.
	if h.TaskStates, err = kv(ctx, js, TaskBucket, "msjfarm task states", l.Replicas, TaskStateTTL); err != nil {
		return nil, err
	}
	return &h, nil
}

func kv(ctx context.Context, js jetstream.JetStream, bucket, desc string, replicas int, ttl time.Duration) (jetstream.KeyValue, error) {
	b, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: bucket, Description: desc, Storage: jetstream.FileStorage, Replicas: replicas, TTL: ttl,
	})
	if err != nil {
		return nil, fmt.Errorf("kv %s: %w", bucket, err)
	}
	return b, nil
}

// Open looks up the objects a worker needs, waiting (polling every
// poll) until the coordinator has created them or ctx ends.
func Open(ctx context.Context, js jetstream.JetStream, poll time.Duration) (*Handles, error) {
	for {
		h, err := open(ctx, js)
		if err == nil {
			return h, nil
		}
		if !errors.Is(err, jetstream.ErrStreamNotFound) && !errors.Is(err, jetstream.ErrConsumerNotFound) &&
			!errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrJetStreamNotEnabled) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the coordinator to create the JetStream layout: %w (last: %v)", ctx.Err(), err)
		case <-time.After(poll):
		}
	}
}

func open(ctx context.Context, js jetstream.JetStream) (*Handles, error) {
	var h Handles
	var err error
	if h.Tasks, err = js.Stream(ctx, TaskStream); err != nil {
		return nil, err
	}
	if h.Workers, err = h.Tasks.Consumer(ctx, WorkerConsumer); err != nil {
		return nil, err
	}
	if h.Campaigns, err = js.KeyValue(ctx, CampaignBucket); err != nil {
		return nil, err
	}
	if h.TaskStates, err = js.KeyValue(ctx, TaskBucket); err != nil {
		return nil, err
	}
	return &h, nil
}
