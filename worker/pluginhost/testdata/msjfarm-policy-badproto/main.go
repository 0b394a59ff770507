// Command msjfarm-policy-badproto is a test plugin for worker/pluginhost that
// speaks another protocol version: in the go-plugin handshake when
// $BADPROTO_MODE is "handshake", only in its Info answer when it is "info".
package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-plugin"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sdk"
)

func main() {
	hs := sdk.Handshake()
	opt := sdk.ServerOptions{}
	switch os.Getenv("BADPROTO_MODE") {
	case "handshake":
		hs.ProtocolVersion = sdk.ProtocolVersion + 1
	case "info":
		opt.ProtocolVersion = sdk.ProtocolVersion + 1
	}
	srv, err := sdk.NewServer("badproto", "0.0.1", fcfs.Policies, opt)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: hs,
		Plugins:         plugin.PluginSet{sdk.PluginKey: &sdk.GRPCPlugin{Impl: srv}},
		GRPCServer:      sdk.GRPCServerFunc,
	})
}
