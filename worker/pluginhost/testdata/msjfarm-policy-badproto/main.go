// Command msjfarm-policy-badproto is a test plugin for worker/pluginhost that
// speaks another protocol version: in the go-plugin handshake when
// $BADPROTO_MODE is "handshake", only in its Info answer when it is "info".
// With $BADPROTO_COUNTERS set, its Info describes FCFS's (absent) counters
// with that JSON, bypassing the SDK's own check: a hostile plugin's
// labels, which the host must refuse. With $BADPROTO_MODE "address" it
// answers the handshake itself, naming the TCP address $BADPROTO_ADDR: a
// confined plugin, which may not connect anywhere, sending the host there.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/msjfarm/msjfarm/internal/wire"
	pb "github.com/msjfarm/msjfarm/internal/wire/proto"
	"github.com/msjfarm/msjfarm/plugins/builtin"
)

// forgedCounters answers Info with the policies' counters_json replaced.
type forgedCounters struct {
	pb.PolicyPluginServer
	json []byte
}

func (f forgedCounters) Info(ctx context.Context, r *pb.InfoRequest) (*pb.InfoResponse, error) {
	in, err := f.PolicyPluginServer.Info(ctx, r)
	if err != nil {
		return nil, err
	}
	for _, p := range in.Policies {
		p.CountersJson = f.json
	}
	return in, nil
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
	}
	fcfs, err := builtin.Lookup("fcfs")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv, err := wire.NewServer("badproto", "0.0.1", []wire.Entry{fcfs}, opt)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if c := os.Getenv("BADPROTO_COUNTERS"); c != "" {
		srv = forgedCounters{srv, []byte(c)}
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: hs,
		Plugins:         plugin.PluginSet{wire.PluginKey: &wire.GRPCPlugin{Impl: srv}},
		GRPCServer:      wire.GRPCServerFunc,
	})
}
