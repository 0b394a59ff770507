package monitor

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
)

//go:embed assets
var assets embed.FS

// Options configures a Server.
type Options struct {
	// Coordinator, if set, enables the live campaign page and the
	// coordinator's metrics.
	Coordinator *coordinator.Coordinator
	// Conn is the process's NATS connection: readiness, reconnect metrics
	// and (with a Coordinator) the workers' heartbeats.
	Conn *nats.Conn
	// Store is the result store: readiness, records for the plots, the
	// final report.
	Store storage.Store
	// Metrics is the registry /metrics serves (NewMetrics).
	Metrics *Metrics
	// Ready, if set, must also report true for /readyz (e.g. the
	// coordinator has resumed its campaigns).
	Ready func() bool
}

// Server serves the page, /metrics, /healthz and /readyz.
type Server struct {
	o Options
	// started is when the server started: the start of the run whose
	// rate the live page shows (RunProgress).
	started     time.Time
	minInterval time.Duration
	mux         *http.ServeMux
	sub         *nats.Subscription

	mu    sync.Mutex
	camps map[string]*campaignCache
	hbs   map[string]*workerSeen

	readyMu  sync.Mutex
	readyAt  time.Time
	readyErr error
	storeTTL time.Duration // how long a storage probe's answer is reused

	httpSrv *http.Server
	closed  bool
}

type workerSeen struct {
	hb      protocol.Heartbeat
	at      time.Time
	samples []sample
}

// New returns a server; with a Coordinator and a Conn it subscribes to
// the workers' heartbeats (Close unsubscribes).
func New(o Options) (*Server, error) {
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
	s := &Server{o: o, started: time.Now(), minInterval: 500 * time.Millisecond, storeTTL: 2 * time.Second, camps: map[string]*campaignCache{},
		hbs: map[string]*workerSeen{}, mux: http.NewServeMux()}
	if o.Conn != nil {
		o.Metrics.watchConn(o.Conn)
	}
	if o.Coordinator != nil {
		o.Metrics.watchCoordinator(o.Coordinator)
		if o.Conn != nil {
			sub, err := o.Conn.Subscribe(protocol.HeartbeatWildcard, s.heartbeat)
			if err != nil {
				return nil, fmt.Errorf("monitor: subscribing to heartbeats: %w", err)
			}
			s.sub = sub
		}
	}
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(o.Metrics.Registry, promhttp.HandlerOpts{}))
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	s.mux.HandleFunc("GET /readyz", s.readyz)
	if o.Coordinator != nil {
		static, _ := fs.Sub(assets, "assets")
		s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
		s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			data, _ := assets.ReadFile("assets/index.html")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(data)
		})
		s.mux.HandleFunc("GET /api/campaigns", s.apiList)
		s.mux.HandleFunc("GET /api/campaigns/{id}", s.apiCampaign)
		s.mux.HandleFunc("GET /report/{id}/{file...}", s.report)
	} else {
		s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintln(w, "msjfarm: /metrics, /healthz, /readyz")
		})
	}
	return s, nil
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// Listen opens addr for the server, with an error that names the flag's
// problem (invalid address, port in use) at start rather than later.
func Listen(flag, addr string) (net.Listener, error) {
	if err := CheckAddr(flag, addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %q: cannot listen: %w", flag, addr, err)
	}
	return ln, nil
}

// CheckAddr refuses an address that is not host:port, naming flag, without
// listening (what a dry run can check).
func CheckAddr(flag, addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%s %q: not a host:port address: %w", flag, addr, err)
	}
	return nil
}

// Serve serves on ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ln.Close()
	}
	s.httpSrv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	srv := s.httpSrv
	s.mu.Unlock()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops serving and unsubscribes.
func (s *Server) Close() error {
	if s.sub != nil {
		_ = s.sub.Unsubscribe()
	}
	s.mu.Lock()
	srv := s.httpSrv
	s.closed = true
	s.mu.Unlock()
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return srv.Shutdown(ctx)
	}
	return nil
}

// URL is the address a browser opens for a listener's address (an
// unspecified host becomes localhost).
func URL(ln net.Listener) string {
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

func (s *Server) heartbeat(m *nats.Msg) {
	var hb protocol.Heartbeat
	if json.Unmarshal(m.Data, &hb) != nil || hb.Worker == "" {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.hbs[hb.Worker]
	if w == nil {
		w = &workerSeen{}
		s.hbs[hb.Worker] = w
	}
	w.hb, w.at = hb, now
	w.samples = addSample(w.samples, sample{now, hb.Done + hb.Failed})
	// Forget workers silent for an hour.
	for n, x := range s.hbs {
		if now.Sub(x.at) > time.Hour {
			delete(s.hbs, n)
		}
	}
}

// workerRows joins the heartbeats with the campaign's running tasks.
func (s *Server) workerRows(v *coordinator.LiveView) []WorkerRow {
	running := map[string]int{}
	for _, w := range v.Running {
		running[w]++
	}
	s.mu.Lock()
	rows := map[string]*WorkerRow{}
	for n, x := range s.hbs {
		if x.hb.Stopping && running[n] == 0 && time.Since(x.at) > time.Minute {
			continue
		}
		rows[n] = &WorkerRow{Worker: n, Host: x.hb.Host, Slots: x.hb.Slots, Done: x.hb.Done, Failed: x.hb.Failed,
			PerMinute: 60 * rateOf(x.samples), LastHeartbeat: x.at.UTC(), Stopping: x.hb.Stopping,
			hbRunning: x.hb.Running, hb: true}
	}
	s.mu.Unlock()
	for n, k := range running {
		if rows[n] == nil {
			rows[n] = &WorkerRow{Worker: n}
		}
		// A worker runs at most what its heartbeat says it runs (over all
		// campaigns) and at most its slots: the coordinator's count may
		// include a finished task not yet acknowledged.
		if r := rows[n]; r.hb {
			k = min(k, r.hbRunning)
			if r.Slots > 0 {
				k = min(k, r.Slots)
			}
		}
		rows[n].Running = k
	}
	out := make([]WorkerRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Worker < out[j].Worker })
	return out
}

func writeJSON(w http.ResponseWriter, data []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(data)
}

func (s *Server) apiList(w http.ResponseWriter, r *http.Request) {
	list := s.o.Coordinator.List()
	for i := range list {
		list[i].Errors = nil
	}
	data, _ := json.Marshal(map[string]any{"campaigns": list})
	writeJSON(w, data)
}

func (s *Server) apiCampaign(w http.ResponseWriter, r *http.Request) {
	data, err := s.campaignJSON(r.Context(), r.PathValue("id"))
	if errors.Is(err, coordinator.ErrUnknownCampaign) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, data)
}

// report serves the campaign's rendered report from storage.
func (s *Server) report(w http.ResponseWriter, r *http.Request) {
	id, file := r.PathValue("id"), r.PathValue("file")
	clean := path.Clean("/" + file)[1:]
	if clean != file || strings.Contains(id, "/") || strings.Contains(id, "..") || file == "" {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	if _, err := s.o.Coordinator.Live(id); err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	data, err := s.o.Store.Get(r.Context(), storage.ReportPrefix(id)+file)
	if errors.Is(err, storage.ErrNotFound) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, "reading the report failed", http.StatusBadGateway)
		return
	}
	if ct := mime.TypeByExtension(path.Ext(file)); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	_, _ = w.Write(data)
}

// readyz reports whether the process reaches NATS and storage (and
// Options.Ready); the storage probe is cached for 2 s so that frequent
// probes do not load the store.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	var problems []string
	if s.o.Conn != nil && !s.o.Conn.IsConnected() {
		problems = append(problems, "NATS: "+s.o.Conn.Status().String())
	}
	if s.o.Store != nil {
		if err := s.storeReady(r.Context()); err != nil {
			problems = append(problems, "storage unreachable")
		}
	}
	if s.o.Ready != nil && !s.o.Ready() {
		problems = append(problems, "starting")
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if len(problems) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "not ready: "+strings.Join(problems, "; "))
		return
	}
	fmt.Fprintln(w, "ready")
}

func (s *Server) storeReady(ctx context.Context) error {
	s.readyMu.Lock()
	defer s.readyMu.Unlock()
	if !s.readyAt.IsZero() && time.Since(s.readyAt) < s.storeTTL {
		return s.readyErr
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := s.o.Store.Stat(ctx, "msjfarm-readyz-probe")
	if errors.Is(err, storage.ErrNotFound) {
		err = nil
	}
	s.readyAt, s.readyErr = time.Now(), err
	return err
}
