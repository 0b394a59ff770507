package monitor

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
)

// Metrics are a process's Prometheus metrics (names prefixed msjfarm_).
// Worker metrics count what this process's workers did; coordinator
// metrics are read from the coordinator at scrape time.
type Metrics struct {
	Registry *prometheus.Registry

	workerTasks   *prometheus.CounterVec
	wall          *prometheus.HistogramVec
	events        prometheus.Counter
	eventsRate    prometheus.Gauge
	pluginCrashes prometheus.Counter
	storeWrite    *prometheus.HistogramVec
	storeErrors   *prometheus.CounterVec

	once struct{ conn, coord, starts sync.Once }
}

// NewMetrics registers the metrics (and the Go and process collectors).
func NewMetrics() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{Registry: r,
		workerTasks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "msjfarm_worker_tasks_total",
			Help: "Replications this process's workers ended, by outcome (done, error: an attempt failed, failed: no attempt left, released, cancelled, verify: a spot-verification run stored)."},
			[]string{"outcome"}),
		wall: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "msjfarm_replication_wall_seconds",
			Help:    "Wall time of the successful replications, by policy.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 12)}, []string{"policy"}),
		events: prometheus.NewCounter(prometheus.CounterOpts{Name: "msjfarm_simulated_events_total",
			Help: "Discrete events simulated by the successful replications (rate() gives the events per second of the process)."}),
		eventsRate: prometheus.NewGauge(prometheus.GaugeOpts{Name: "msjfarm_simulated_events_per_second",
			Help: "Events per wall-clock second of the last successful replication (one slot's speed)."}),
		pluginCrashes: prometheus.NewCounter(prometheus.CounterOpts{Name: "msjfarm_plugin_crashes_total",
			Help: "Replications that ended because their policy plugin process crashed."}),
		storeWrite: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "msjfarm_storage_write_seconds",
			Help:    "Latency of writes to the result store, by operation.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 3, 10)}, []string{"op"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "msjfarm_storage_write_errors_total",
			Help: "Failed writes to the result store, by operation."}, []string{"op"}),
	}
	for _, o := range []string{worker.OutcomeDone, worker.OutcomeError, worker.OutcomeFailed, worker.OutcomeReleased, worker.OutcomeCancelled, worker.OutcomeVerify} {
		m.workerTasks.WithLabelValues(o)
	}
	for _, op := range []string{"put", "put_if_absent", "put_file", "delete"} {
		m.storeErrors.WithLabelValues(op)
	}
	r.MustRegister(m.workerTasks, m.wall, m.events, m.eventsRate, m.pluginCrashes, m.storeWrite, m.storeErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveTask is a worker.Options.Observe callback.
func (m *Metrics) ObserveTask(e worker.TaskEvent) {
	m.workerTasks.WithLabelValues(e.Outcome).Inc()
	if e.Outcome == worker.OutcomeDone {
		m.wall.WithLabelValues(e.Task.Policy).Observe(e.Wall.Seconds())
		m.events.Add(float64(e.Events))
		if s := e.Wall.Seconds(); s > 0 {
			m.eventsRate.Set(float64(e.Events) / s)
		}
	}
	if e.Outcome == worker.OutcomeError && errors.Is(e.Err, pluginhost.ErrCrash) {
		m.pluginCrashes.Inc()
	}
}

// PluginStarts exports a plugin host's process starts (call once per
// process; later calls are ignored).
func (m *Metrics) PluginStarts(h *pluginhost.Host) {
	if h == nil {
		return
	}
	m.once.starts.Do(func() {
		m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "msjfarm_plugin_process_starts_total",
			Help: "Policy plugin processes started (one per binary and slot, plus one per crash or hang)."},
			func() float64 { return float64(h.Starts()) }))
	})
}

func (m *Metrics) watchConn(nc *nats.Conn) {
	m.once.conn.Do(func() {
		m.Registry.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "msjfarm_nats_reconnects_total",
				Help: "Reconnections of this process's NATS connection."},
				func() float64 { return float64(nc.Stats().Reconnects) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "msjfarm_nats_connected",
				Help: "1 while the NATS connection is up."},
				func() float64 {
					if nc.IsConnected() {
						return 1
					}
					return 0
				}))
	})
}

func (m *Metrics) watchCoordinator(co *coordinator.Coordinator) {
	m.once.coord.Do(func() { m.Registry.MustRegister(&coordCollector{co: co}) })
}

// coordCollector reads the coordinator's campaigns at scrape time.
type coordCollector struct{ co *coordinator.Coordinator }

var (
	descTasks = prometheus.NewDesc("msjfarm_tasks",
		"Tasks of the coordinator's campaigns by state (queued, running, done, failed).", []string{"state"}, nil)
	descCampaigns = prometheus.NewDesc("msjfarm_campaigns",
		"Campaigns the coordinator knows, by state.", []string{"state"}, nil)
	descRedeliveries = prometheus.NewDesc("msjfarm_task_redeliveries_total",
		"Task deliveries beyond the first that workers reported (a crashed or timed-out worker, a retried error).", nil, nil)
	descVerify = prometheus.NewDesc("msjfarm_verify_tasks",
		"Tasks sampled for spot verification, by outcome (pending, verified, mismatch, unresolved, unverified, skipped).", []string{"outcome"}, nil)
	descStuck = prometheus.NewDesc("msjfarm_campaigns_stuck",
		"Running campaigns that do not move, by reason (reconciling: their missing tasks cannot be queued; finalising: their summary cannot be written).", []string{"reason"}, nil)
	descRefused = prometheus.NewDesc("msjfarm_task_messages_refused",
		"Task messages workers refused (forged, corrupted, or from a coordinator of another msjfarm version), over the coordinator's campaigns since it started.", nil, nil)
	descPaused = prometheus.NewDesc("msjfarm_workers_paused",
		"Workers whose heartbeats say their store is unavailable (paused: no new task, finished results held).", nil, nil)
	descDisagreeing = prometheus.NewDesc("msjfarm_verify_disagreeing_tasks",
		"Sampled tasks on which spot verification found the worker's result disagreeing (outvoted, or not confirmed by a majority), by worker.", []string{"worker"}, nil)
)

func (c *coordCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descTasks
	ch <- descCampaigns
	ch <- descRedeliveries
	ch <- descVerify
	ch <- descDisagreeing
	ch <- descStuck
	ch <- descRefused
	ch <- descPaused
}

func (c *coordCollector) Collect(ch chan<- prometheus.Metric) {
	var q, r, d, f float64
	camps := map[string]float64{protocol.CampaignRunning: 0, protocol.CampaignDone: 0, protocol.CampaignCancelled: 0}
	var reconciling, finalising, refused float64
	for _, s := range c.co.List() {
		q += float64(s.Queued)
		r += float64(s.Running)
		d += float64(s.Done)
		f += float64(s.Failed)
		camps[s.State]++
		refused += float64(s.RejectedTotal)
		if s.Reconciling != "" {
			reconciling++
		}
		if s.Finalising != "" {
			finalising++
		}
	}
	ch <- prometheus.MustNewConstMetric(descStuck, prometheus.GaugeValue, reconciling, "reconciling")
	ch <- prometheus.MustNewConstMetric(descStuck, prometheus.GaugeValue, finalising, "finalising")
	ch <- prometheus.MustNewConstMetric(descRefused, prometheus.GaugeValue, refused)
	ch <- prometheus.MustNewConstMetric(descPaused, prometheus.GaugeValue, float64(len(c.co.PausedWorkers())))
	ch <- prometheus.MustNewConstMetric(descTasks, prometheus.GaugeValue, q, "queued")
	ch <- prometheus.MustNewConstMetric(descTasks, prometheus.GaugeValue, r, "running")
	ch <- prometheus.MustNewConstMetric(descTasks, prometheus.GaugeValue, d, "done")
	ch <- prometheus.MustNewConstMetric(descTasks, prometheus.GaugeValue, f, "failed")
	for st, n := range camps {
		ch <- prometheus.MustNewConstMetric(descCampaigns, prometheus.GaugeValue, n, st)
	}
	ch <- prometheus.MustNewConstMetric(descRedeliveries, prometheus.CounterValue, float64(c.co.Redeliveries()))
	outcomes, bad := c.co.VerifyCounts()
	for o, n := range outcomes {
		ch <- prometheus.MustNewConstMetric(descVerify, prometheus.GaugeValue, float64(n), o)
	}
	for w, n := range bad {
		ch <- prometheus.MustNewConstMetric(descDisagreeing, prometheus.GaugeValue, float64(n), w)
	}
}

// InstrumentStore wraps st so that its writes are timed and their errors
// counted (msjfarm_storage_write_seconds, msjfarm_storage_write_errors_total).
func (m *Metrics) InstrumentStore(st storage.Store) storage.Store {
	return &timedStore{Store: st, m: m}
}

type timedStore struct {
	storage.Store
	m *Metrics
}

func (s *timedStore) done(op string, start time.Time, err error) {
	s.m.storeWrite.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		s.m.storeErrors.WithLabelValues(op).Inc()
	}
}

func (s *timedStore) Put(ctx context.Context, key string, data []byte) error {
	t := time.Now()
	err := s.Store.Put(ctx, key, data)
	s.done("put", t, err)
	return err
}

func (s *timedStore) PutIfAbsent(ctx context.Context, key string, data []byte) (bool, error) {
	t := time.Now()
	ok, err := s.Store.PutIfAbsent(ctx, key, data)
	s.done("put_if_absent", t, err)
	return ok, err
}

func (s *timedStore) PutFile(ctx context.Context, key, path string) error {
	t := time.Now()
	err := s.Store.PutFile(ctx, key, path)
	s.done("put_file", t, err)
	return err
}

func (s *timedStore) Delete(ctx context.Context, key string) error {
	t := time.Now()
	err := s.Store.Delete(ctx, key)
	s.done("delete", t, err)
	return err
}

// Walk passes the store's paged listing through (storage.Walk): wrapped,
// the coordinator's store would otherwise list every key at once.
func (s *timedStore) Walk(ctx context.Context, prefix string, fn func(key string) error) error {
	return storage.Walk(ctx, s.Store, prefix, fn)
}
