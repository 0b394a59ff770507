// Command msjfarm-policy-badproto is a test plugin for worker/pluginhost that
// speaks another protocol version: in the go-plugin handshake when
// $BADPROTO_MODE is "handshake", only in its Info answer when it is "info".
// With $BADPROTO_COUNTERS set, its Info describes FCFS's (absent) counters
// with that JSON, bypassing the SDK's own check: a hostile plugin's
// labels, which the host must refuse. With $BADPROTO_MODE "address" it
// answers the handshake itself, naming the TCP address $BADPROTO_ADDR: a
// confined plugin, which may not connect anywhere, sending the host there;
// with "symlink" or "hardlink", the unix socket $BADPROTO_ADDR, through
// a link in its private TMPDIR.
// With $BADPROTO_MODE "traceflood" its Run streams decision-trace chunks
// nobody asked for, without end (the trace asked for, without end, if
// the host asks for one); with "progressflood" it sends 10^6 progress
// messages before the replication's own updates; with "tworesults" it
// sends its result twice; with "resulthang" it sends its result and
// then never returns from Run. With "nobeat", "nobeathang" and
// "nobeatresulthang" its Info does not say heartbeat, as a plugin written
// without the SDK: "nobeat" reports its count of arrivals every 400 ms for
// 3.2 s, then its last arrival for 3 s (a long drain), then runs the
// replication; "nobeathang" reports 3 arrivals and then hangs, sending
// nothing, until the call ends; "nobeatresulthang" runs the replication
// and then never returns from Run; "nobeatdrainhang" reports its count
// of arrivals every 400 ms for 3.2 s, then its last arrival, and then
// hangs (a drain that does not return). With "refhang" its reference
// model "pooled" (SRPT-1 otherwise) hangs in its Run from the start. It
// serves FCFS, "pooled" and, as
// "preempting", the preempting engine policy msf-preemptive; with "halvedtimes" it halves every
// result's response and waiting times and numbers in system, its sizes
// left as they are; with "scaled" it halves every time, mean size and
// number in system alike (consistent with itself: only the seed's own
// jobs tell). With $BADPROTO_ENGINE set, its Info and every result
// declare that engine version instead of the one it links: a plugin
// whose results the host would otherwise check against the seed's jobs
// claiming an engine whose job sequence the host cannot draw.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/msjfarm/msjfarm/internal/wire"
	pb "github.com/msjfarm/msjfarm/internal/wire/proto"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sim"
)

// editedInfo answers Info with edit applied to the server's answer: the
// counters, heartbeat or engine a mode forges.
type editedInfo struct {
	pb.PolicyPluginServer
	edit func(*pb.InfoResponse)
}

func (e editedInfo) Info(ctx context.Context, r *pb.InfoRequest) (*pb.InfoResponse, error) {
	in, err := e.PolicyPluginServer.Info(ctx, r)
	if err == nil {
		e.edit(in)
	}
	return in, err
}

// flood answers Run with updates the host did not ask for.
type flood struct {
	pb.PolicyPluginServer
	mode string
}

func (f flood) Run(r *pb.RunRequest, s pb.PolicyPlugin_RunServer) error {
	switch f.mode {
	case "traceflood":
		const n = 1 << 14
		c := &pb.TraceChunk{Time: make([]float64, n), Kind: make([]byte, n), Job: make([]int64, n),
			Class: make([]int32, n), Need: make([]int32, n), Busy: make([]int32, n)}
		for i := range n {
			c.Kind[i], c.Need[i], c.Job[i] = 1, 1, int64(i)
		}
		for {
			if err := s.Send(&pb.RunUpdate{Update: &pb.RunUpdate_Trace{Trace: c}}); err != nil {
				return err
			}
		}
	case "progressflood":
		for i := range int64(1e6) {
			if err := s.Send(&pb.RunUpdate{Update: &pb.RunUpdate_Progress{Progress: &pb.Progress{Done: i, Total: 1e6}}}); err != nil {
				return err
			}
		}
	case "tworesults":
		return f.PolicyPluginServer.Run(r, twice{s})
	case "resulthang":
		if err := f.PolicyPluginServer.Run(r, s); err != nil {
			return err
		}
		time.Sleep(time.Hour) // the result is sent; the call never ends
		return nil
	case "claims", "times", "halvedtimes", "scaled":
		return f.PolicyPluginServer.Run(r, lies{s, f.mode})
	}
	return f.PolicyPluginServer.Run(r, s)
}

// noBeat is a plugin that does not send the engine loop's beats (its
// Info, edited, does not say heartbeat): its Run reports only a count of
// arrivals before the replication's own updates (see the package doc).
type noBeat struct {
	pb.PolicyPluginServer
	mode string
}

func (n noBeat) Run(r *pb.RunRequest, s pb.PolicyPlugin_RunServer) error {
	var req wire.RunRequest
	if err := json.Unmarshal(r.RequestJson, &req); err != nil {
		return err
	}
	total := req.Run.Warmup + req.Run.Arrivals
	progress := func(done int64) error {
		return s.Send(&pb.RunUpdate{Update: &pb.RunUpdate_Progress{Progress: &pb.Progress{Done: done, Total: total}}})
	}
	// arrivals reports a count moving every 400 ms for 3.2 s, then the
	// last arrival.
	arrivals := func() error {
		for i := range int64(8) {
			if err := progress(i + 1); err != nil {
				return err
			}
			time.Sleep(400 * time.Millisecond)
		}
		return progress(total)
	}
	switch n.mode {
	case "nobeatdrainhang":
		if err := arrivals(); err != nil {
			return err
		}
		<-s.Context().Done() // a drain that does not return
		return s.Context().Err()
	case "nobeatresulthang":
		if err := n.PolicyPluginServer.Run(r, s); err != nil {
			return err
		}
		<-s.Context().Done() // the result is sent; the call never ends
		return s.Context().Err()
	case "nobeathang":
		for i := range int64(3) {
			if err := progress(i + 1); err != nil {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
		<-s.Context().Done() // a loop that does not return
		return s.Context().Err()
	}
	if err := arrivals(); err != nil {
		return err
	}
	time.Sleep(3 * time.Second)
	return n.PolicyPluginServer.Run(r, s)
}

// lies edits its result: "claims" says FCFS preempts and knows sizes,
// "times" that it took -1 ns and the longest CPU time there is,
// "halvedtimes" that its jobs spent half as long in the system.
type lies struct {
	pb.PolicyPlugin_RunServer
	mode string
}

func (l lies) Send(u *pb.RunUpdate) error {
	if r, ok := u.Update.(*pb.RunUpdate_Result); ok {
		switch l.mode {
		case "times":
			r.Result.ElapsedNs, r.Result.CpuNs = -1, math.MaxInt64
		case "halvedtimes", "scaled":
			var res sim.Result
			if err := json.Unmarshal(r.Result.ResultJson, &res); err != nil {
				return err
			}
			half := func(cs *sim.ClassStats) {
				cs.MeanResponse, cs.MeanWait, cs.VarResponse = cs.MeanResponse/2, cs.MeanWait/2, cs.VarResponse/4
				if l.mode == "scaled" {
					cs.MeanSize /= 2
				}
			}
			half(&res.Overall)
			for i := range res.Classes {
				half(&res.Classes[i])
			}
			res.MeanInSystem, res.MeanInQueue, res.WeightedMeanResponse = res.MeanInSystem/2, res.MeanInQueue/2, res.WeightedMeanResponse/2
			r.Result.ResultJson, _ = json.Marshal(res)
		default:
			var m map[string]any
			if err := json.Unmarshal(r.Result.ResultJson, &m); err != nil {
				return err
			}
			m["preemption"], m["size_aware"] = "resume", true
			r.Result.ResultJson, _ = json.Marshal(m)
		}
	}
	return l.PolicyPlugin_RunServer.Send(u)
}

// otherEngine declares engine instead of the engine it links in every
// result (its Info, edited, declares it too).
type otherEngine struct {
	pb.PolicyPluginServer
	engine string
}

func (o otherEngine) Run(r *pb.RunRequest, s pb.PolicyPlugin_RunServer) error {
	return o.PolicyPluginServer.Run(r, engineSender{s, o.engine})
}

// engineSender writes its engine into each result it sends.
type engineSender struct {
	pb.PolicyPlugin_RunServer
	engine string
}

func (e engineSender) Send(u *pb.RunUpdate) error {
	if r, ok := u.Update.(*pb.RunUpdate_Result); ok {
		var m map[string]json.RawMessage // every other field kept byte for byte
		if err := json.Unmarshal(r.Result.ResultJson, &m); err != nil {
			return err
		}
		m["engine"], _ = json.Marshal(e.engine)
		r.Result.ResultJson, _ = json.Marshal(m)
	}
	return e.PolicyPlugin_RunServer.Send(u)
}

// twice sends each result twice.
type twice struct{ pb.PolicyPlugin_RunServer }

func (t twice) Send(u *pb.RunUpdate) error {
	if _, ok := u.Update.(*pb.RunUpdate_Result); ok {
		if err := t.PolicyPlugin_RunServer.Send(u); err != nil {
			return err
		}
	}
	return t.PolicyPlugin_RunServer.Send(u)
}

func main() {
	hs := wire.Handshake()
	opt := wire.ServerOptions{}
	switch os.Getenv("BADPROTO_MODE") {
	case "handshake":
		hs.ProtocolVersion = wire.ProtocolVersion + 1
	case "info":
		opt.ProtocolVersion = wire.ProtocolVersion + 1
	case "address":
		fmt.Printf("%d|%d|tcp|%s|grpc\n", plugin.CoreProtocolVersion, wire.ProtocolVersion, os.Getenv("BADPROTO_ADDR"))
		time.Sleep(time.Minute)
		return
	case "symlink", "hardlink":
		// A name in its private TMPDIR for another process's socket.
		name := filepath.Join(os.TempDir(), "plugin-redirect")
		link := os.Symlink
		if os.Getenv("BADPROTO_MODE") == "hardlink" {
			link = os.Link
		}
		if err := link(os.Getenv("BADPROTO_ADDR"), name); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%d|%d|unix|%s|grpc\n", plugin.CoreProtocolVersion, wire.ProtocolVersion, name)
		time.Sleep(time.Minute)
		return
	}
	fcfs, err := builtin.Lookup("fcfs")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pre, err := builtin.Lookup("msf-preemptive")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pre.Name = "preempting" // no built-in policy's name: a worker refuses a clash
	ref, err := builtin.Lookup("srpt-1")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ref.Name = "pooled"
	if os.Getenv("BADPROTO_MODE") == "refhang" {
		ref.Reference = func(*sim.Workload, sim.Config) (*sim.Result, error) {
			select {} // a reference model's code that does not return
		}
	}
	srv, err := wire.NewServer("badproto", "0.0.1", []wire.Entry{fcfs, pre, ref}, opt)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if c := os.Getenv("BADPROTO_COUNTERS"); c != "" {
		srv = editedInfo{srv, func(in *pb.InfoResponse) {
			for _, p := range in.Policies {
				p.CountersJson = []byte(c)
			}
		}}
	}
	if m := os.Getenv("BADPROTO_MODE"); m == "nobeat" || m == "nobeathang" || m == "nobeatresulthang" || m == "nobeatdrainhang" {
		srv = noBeat{editedInfo{srv, func(in *pb.InfoResponse) { in.Heartbeat = false }}, m}
	}
	if m := os.Getenv("BADPROTO_MODE"); m == "traceflood" || m == "progressflood" || m == "tworesults" || m == "resulthang" || m == "claims" || m == "times" || m == "halvedtimes" || m == "scaled" {
		srv = flood{srv, m}
	}
	if e := os.Getenv("BADPROTO_ENGINE"); e != "" {
		// Outermost: the lies' results get its engine too.
		srv = otherEngine{editedInfo{srv, func(in *pb.InfoResponse) { in.EngineVersion = e }}, e}
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: hs,
		Plugins:         plugin.PluginSet{wire.PluginKey: &wire.GRPCPlugin{Impl: srv}},
		GRPCServer:      wire.GRPCServerFunc,
	})
}
