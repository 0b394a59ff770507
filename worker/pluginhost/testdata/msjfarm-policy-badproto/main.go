// Command msjfarm-policy-badproto is a test plugin for worker/pluginhost that
// speaks another protocol version: in the go-plugin handshake when
// $BADPROTO_MODE is "handshake", only in its Info answer when it is "info".
package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-plugin"

	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/plugins/builtin"
)

func main() {
	hs := wire.Handshake()
	opt := wire.ServerOptions{}
	switch os.Getenv("BADPROTO_MODE") {
	case "handshake":
		hs.ProtocolVersion = wire.ProtocolVersion + 1
	case "info":
		opt.ProtocolVersion = wire.ProtocolVersion + 1
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
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: hs,
		Plugins:         plugin.PluginSet{wire.PluginKey: &wire.GRPCPlugin{Impl: srv}},
		GRPCServer:      wire.GRPCServerFunc,
	})
}
