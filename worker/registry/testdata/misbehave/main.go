// Command misbehave is a test plugin for worker/registry that misbehaves in
// the way its file name says (the test copies it under each name):
//
//   - msjfarm-policy-badproto: speaks another protocol version in the
//     go-plugin handshake;
//   - msjfarm-policy-exits: exits during the handshake, before answering;
//   - msjfarm-policy-badschema: a policy whose schema rejects its own
//     default;
//   - msjfarm-policy-refuses: Info lists policy "ghost", which Run then
//     rejects as unknown;
//   - msjfarm-policy-impostor: serves a policy named fcfs (a built-in
//     name) as plugin "impostor";
//   - msjfarm-policy-copies: serves the built-in MSFQ as "msfq-copy", a
//     third party's policy whose Init refuses a threshold beyond k−1;
//   - msjfarm-policy-late: serves "fcfs-late", an FCFS that fails when a
//     job arrives with two others in the system (its code for a queue is
//     broken, its Init and first starts are not);
//   - msjfarm-policy-escapes: text with terminal escape sequences where a
//     terminal shows it: "fcfs-esc", documented with a title change and a
//     screen clear, whose replications fail with a message that moves the
//     cursor back over its own line and writes a success there;
//   - msjfarm-policy-escname: a policy whose name holds an escape sequence;
//   - msjfarm-policy-bigdoc: a policy documented with 64 MiB of text;
//   - anything else: serves policy "lcfs-fit-test" correctly, or under the
//     name $MISBEHAVE_NAME when that is set (an Info that follows the
//     plugin's environment).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/msjfarm/msjfarm/internal/wire"
	pb "github.com/msjfarm/msjfarm/internal/wire/proto"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sim"
)

// badDefault is FCFS with a parameter whose default is outside its range.
type badDefault struct{ sim.Policy }

func (badDefault) Params() []sim.Param {
	one := 1.0
	return []sim.Param{{Name: "x", Type: sim.Float, Default: 5.0, Max: &one}}
}
func (badDefault) Configure(sim.Values) error { return nil }

// late is FCFS that panics when a job arrives with two others in the
// system.
type late struct{ sim.Policy }

func (l late) Arrive(s *sim.System, j *sim.Job) {
	if s.InSystem() > 2 {
		panic("fcfs-late: three jobs in the system: this policy's queue is broken")
	}
	l.Policy.Arrive(s, j)
}

// blocks is FCFS whose Init never returns.
type blocks struct{ sim.Policy }

func (blocks) Init(*sim.System) error { select {} }

// escaping is FCFS whose Init fails with a message that, printed raw on a
// terminal, erases its own line and writes a success in its place.
type escaping struct{ sim.Policy }

func (escaping) Init(*sim.System) error {
	return fmt.Errorf("oops\r\x1b[2K3/3 done (100%%), 0 failed \x1b]52;c;cm0gLXJmIH4=\x07")
}

// refusing rejects every Run of policy "ghost".
type refusing struct{ pb.PolicyPluginServer }

func (r refusing) Run(req *pb.RunRequest, stream pb.PolicyPlugin_RunServer) error {
	if strings.Contains(string(req.RequestJson), `"policy":"ghost"`) {
		return status.Error(codes.InvalidArgument, `unknown policy "ghost"`)
	}
	return r.PolicyPluginServer.Run(req, stream)
}

func (r refusing) Info(ctx context.Context, in *pb.InfoRequest) (*pb.InfoResponse, error) {
	return r.PolicyPluginServer.Info(ctx, in)
}

func main() {
	mode := strings.TrimPrefix(filepath.Base(os.Args[0]), "msjfarm-policy-")
	fcfs, err := builtin.Lookup("fcfs")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hs := wire.Handshake()
	name := "lcfs-fit-test"
	if n := os.Getenv("MISBEHAVE_NAME"); n != "" {
		name = n
	}
	entries := []wire.Entry{{Name: name, Doc: "FCFS under another name", New: fcfs.New}}
	switch mode {
	case "badproto":
		hs.ProtocolVersion = wire.ProtocolVersion + 1
	case "exits":
		fmt.Fprintln(os.Stderr, "misbehave: exiting during the handshake")
		os.Exit(3)
	case "badschema":
		entries = []wire.Entry{{Name: "bad-default", New: func() sim.Policy { return badDefault{fcfs.New()} }}}
	case "impostor":
		entries = []wire.Entry{{Name: "fcfs", New: fcfs.New}}
	case "copies":
		msfq, err := builtin.Lookup("msfq")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		entries = []wire.Entry{{Name: "msfq-copy", Doc: "MSFQ under another name", New: msfq.New}}
	case "refuses":
		entries = []wire.Entry{{Name: "ghost", New: fcfs.New}, {Name: "fine", New: fcfs.New}}
	case "escapes":
		entries = []wire.Entry{{Name: "fcfs-esc", Doc: "FCFS\x1b]0;pwned\x07\x1b[2J, documented with escapes\u202e", New: func() sim.Policy { return escaping{fcfs.New()} }}}
	case "escname":
		entries = []wire.Entry{{Name: "fcfs\x1b[31m", Doc: "a name with an escape", New: fcfs.New}}
	case "bigdoc":
		entries = []wire.Entry{{Name: "fcfs-big", Doc: strings.Repeat("a long doc. ", 64<<20/12), New: fcfs.New}}
	case "blocks":
		entries = []wire.Entry{{Name: "fcfs-blocks", Doc: "FCFS whose Init never returns", New: func() sim.Policy { return blocks{fcfs.New()} }}}
	case "late":
		entries = []wire.Entry{{Name: "fcfs-late", Doc: "FCFS that fails once a job waits", New: func() sim.Policy { return late{fcfs.New()} }}}
	}
	srv, err := wire.NewServer(mode, "0.0.1", entries, wire.ServerOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if mode == "refuses" {
		srv = refusing{srv}
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: hs,
		Plugins:         plugin.PluginSet{wire.PluginKey: &wire.GRPCPlugin{Impl: srv}},
		GRPCServer:      wire.GRPCServerFunc,
	})
}
