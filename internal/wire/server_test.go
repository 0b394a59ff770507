package wire_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/msjfarm/msjfarm/internal/wire"
	pb "github.com/msjfarm/msjfarm/internal/wire/proto"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim"
)

// fcfsEntries serve FCFS, the simplest policy, as the server sees it.
var fcfsEntries = []wire.Entry{{Name: "fcfs", Doc: "first come first served", New: func() sim.Policy { return &fcfs.FCFS{} }}}

// stream is an in-memory Run stream.
type stream struct {
	grpc.ServerStream
	ctx context.Context
	mu  sync.Mutex
	got []*pb.RunUpdate
}

func (s *stream) Context() context.Context { return s.ctx }
func (s *stream) Send(u *pb.RunUpdate) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, u)
	return nil
}

func request(t *testing.T, policy string, arrivals int64) []byte {
	t.Helper()
	spec, _ := workload.Named("four-class")
	b, err := json.Marshal(wire.RunRequest{Policy: policy, Workload: spec, ArrivalRate: 2,
		Run: wire.Run{Seed: 3, RunConfig: wire.RunConfig{Warmup: 100, Arrivals: arrivals}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func run(t *testing.T, srv pb.PolicyPluginServer, req *pb.RunRequest) (*stream, error) {
	t.Helper()
	st := &stream{ctx: context.Background()}
	return st, srv.Run(req, st)
}

func TestNewServerRejects(t *testing.T) {
	ok := fcfsEntries
	for _, c := range []struct {
		name  string
		specs []wire.Entry
		want  string
	}{
		{"", ok, "name is empty"},
		{"x", nil, "serves no policies"},
		{"x", append(append([]wire.Entry{}, ok...), ok...), "listed twice"},
		{"x", []wire.Entry{{Name: "y"}}, "exactly one of New and Reference"},
		{"x", []wire.Entry{{Name: "y", New: func() sim.Policy { panic("boom") }}}, "New panicked: boom"},
	} {
		if _, err := wire.NewServer(c.name, "1", c.specs, wire.ServerOptions{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewServer(%q, %d specs): %v, want %q", c.name, len(c.specs), err, c.want)
		}
	}
}

// The result through the server is byte for byte the in-process one, and
// progress ends at the total.
//
// Complexity 21: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestRun(t *testing.T) {
	srv, err := wire.NewServer("fcfs", "1.2.3", fcfsEntries, wire.ServerOptions{MaxConcurrent: 1})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := srv.Info(context.Background(), &pb.InfoRequest{})
	if in.PluginName != "fcfs" || in.PluginVersion != "1.2.3" || in.EngineVersion != sim.Version ||
		in.ProtocolVersion != wire.ProtocolVersion || in.MaxConcurrent != 1 || len(in.Policies) != 1 ||
		in.Policies[0].Preemption != "none" || string(in.Policies[0].ParamsJson) != "[]" {
		t.Fatalf("info %v", in)
	}
	body := request(t, "FCFS", 5000)
	st, err := run(t, srv, &pb.RunRequest{RequestJson: body, Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	var rr wire.RunRequest
	json.Unmarshal(body, &rr)
	w, _ := rr.BuildWorkload()
	local, _ := fcfsEntries[0].Run(w, nil, rr.Run.Config())
	want, _ := json.Marshal(local)
	last := st.got[len(st.got)-1].GetResult()
	if last == nil || string(last.ResultJson) != string(want) {
		t.Fatalf("result differs from the in-process one")
	}
	var events int64
	var prog *pb.Progress
	for _, u := range st.got {
		if c := u.GetTrace(); c != nil {
			events += int64(len(c.Time))
		}
		if p := u.GetProgress(); p != nil {
			prog = p
		}
	}
	if events != last.TraceEvents || events < 3*5100 {
		t.Errorf("streamed %d trace events, result says %d", events, last.TraceEvents)
	}
	if prog == nil || prog.Done != 5100 || prog.Total != 5100 {
		t.Errorf("last progress %v, want 5100 of 5100", prog)
	}
}

func TestRunRejects(t *testing.T) {
	srv, _ := wire.NewServer("fcfs", "1", fcfsEntries, wire.ServerOptions{})
	mser := request(t, "fcfs", 100)
	mser = []byte(strings.Replace(string(mser), `"arrivals":100`, `"arrivals":100,"mser":true`, 1))
	for _, c := range []struct {
		req  *pb.RunRequest
		code codes.Code
		want string
	}{
		{&pb.RunRequest{RequestJson: []byte("{")}, codes.InvalidArgument, "request:"},
		{&pb.RunRequest{RequestJson: []byte(`{"policy":"fcfs","shiny":1}`)}, codes.InvalidArgument, `unknown field "shiny"`},
		{&pb.RunRequest{RequestJson: request(t, "lifo", 100)}, codes.InvalidArgument, "unknown policy"},
		{&pb.RunRequest{RequestJson: request(t, "fcfs", 0)}, codes.InvalidArgument, "arrivals: must be >= 1"},
		{&pb.RunRequest{RequestJson: mser, Trace: true}, codes.InvalidArgument, "MSER"},
		{&pb.RunRequest{RequestJson: request(t, "fcfs", 1000), Trace: true, MaxTraceEvents: 10}, codes.ResourceExhausted, "max_trace_events"},
	} {
		_, err := run(t, srv, c.req)
		if st, _ := status.FromError(err); st.Code() != c.code || !strings.Contains(st.Message(), c.want) {
			t.Errorf("%s: got %v, want %v containing %q", c.req.RequestJson, err, c.code, c.want)
		}
	}
}

// A panicking reference model fails its replication, not the process.
func TestReferencePanic(t *testing.T) {
	srv, err := wire.NewServer("ref", "1", []wire.Entry{{Name: "ref", Reference: func(*sim.Workload, sim.Config) (*sim.Result, error) {
		panic("reference model bug")
	}}}, wire.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(t, srv, &pb.RunRequest{RequestJson: request(t, "ref", 100)})
	if st, _ := status.FromError(err); st.Code() != codes.Aborted || !strings.Contains(st.Message(), "reference model bug") {
		t.Fatalf("got %v", err)
	}
}

// gate is a policy whose Init waits for a gate, counting how many run at once.
type gate struct {
	fcfs.FCFS
	open      chan struct{}
	now, peak *atomic.Int32
}

func (g *gate) Init(s *sim.System) error {
	n := g.now.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
	<-g.open
	g.now.Add(-1)
	return g.FCFS.Init(s)
}

// The process runs at most MaxConcurrent replications at once; the others
// wait for a slot, or for their deadline.
func TestConcurrencyLimit(t *testing.T) {
	open := make(chan struct{})
	var now, peak atomic.Int32
	srv, _ := wire.NewServer("gate", "1", []wire.Entry{{Name: "gate", New: func() sim.Policy {
		return &gate{open: open, now: &now, peak: &peak}
	}}}, wire.ServerOptions{MaxConcurrent: 2})
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = run(t, srv, &pb.RunRequest{RequestJson: request(t, "gate", 100)})
		}(i)
	}
	time.Sleep(100 * time.Millisecond)
	if n := now.Load(); n != 2 {
		t.Errorf("%d replications running, want the limit 2", n)
	}
	// One more with a short deadline times out waiting for a slot.
	_, err := run(t, srv, &pb.RunRequest{RequestJson: request(t, "gate", 100), DeadlineMs: 50})
	if st, _ := status.FromError(err); st.Code() != codes.DeadlineExceeded {
		t.Errorf("waiting past the deadline: %v", err)
	}
	close(open)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("run %d: %v", i, err)
		}
	}
	if p := peak.Load(); p != 2 {
		t.Errorf("peak concurrency %d, want 2", p)
	}
}
