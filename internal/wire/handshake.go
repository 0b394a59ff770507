package wire

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/msjfarm/msjfarm/internal/wire/proto"
)

// ProtocolVersion is the version of the host–plugin wire contract
// (internal/wire/proto/policy.proto and the JSON of RunRequest). It is checked in
// the go-plugin handshake and again in Info; a host and a plugin of different
// versions refuse each other with an error naming both. Bump it for any
// change that a peer built against the previous version could misread.
const ProtocolVersion = 1

// PluginKey is the name under which a binary serves its policies in the
// go-plugin plugin set.
const PluginKey = "policy"

// Environment variables the host sets for a plugin process.
const (
	// EnvMaxConcurrent is the number of replications the process may run
	// at once; further Run calls wait for a slot (default: the number of
	// CPUs).
	EnvMaxConcurrent = "MSJFARM_PLUGIN_MAX_CONCURRENT"
	// EnvLogLevel is the plugin's hclog level (default "warn").
	EnvLogLevel = "MSJFARM_PLUGIN_LOG_LEVEL"
)

// MaxMessageBytes bounds one gRPC message either way (a request carrying a
// replayed trace, a result carrying a long time series).
const MaxMessageBytes = 256 << 20

// Handshake is the go-plugin handshake every msjfarm policy plugin answers.
// The magic cookie only keeps a plugin binary from being run by hand by
// mistake (it then prints that it is a plugin and exits); it is not a
// security measure (the host verifies binaries by sha256).
func Handshake() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		ProtocolVersion:  ProtocolVersion,
		MagicCookieKey:   "MSJFARM_POLICY_PLUGIN",
		MagicCookieValue: "c0b1e6e1f3a94e5b9d3c1a7f2e8d4b60",
	}
}

// GRPCServerFunc is the go-plugin ServeConfig.GRPCServer of every msjfarm
// plugin: the default server with message limits raised to MaxMessageBytes.
func GRPCServerFunc(opts []grpc.ServerOption) *grpc.Server {
	opts = append(opts, grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes))
	return plugin.DefaultGRPCServer(opts)
}

// GRPCPlugin is the go-plugin glue: the plugin side registers Impl, the
// host side gets a proto.PolicyPluginClient.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl is the implementation served (nil on the host side).
	Impl pb.PolicyPluginServer
}

// GRPCServer registers the policy service.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterPolicyPluginServer(s, p.Impl)
	return nil
}

// GRPCClient returns a proto.PolicyPluginClient on the connection.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pb.NewPolicyPluginClient(c), nil
}
