// Package proto is the generated gRPC contract between an msjfarm worker and
// a policy plugin binary (policy.proto; regenerate with gen.sh). Plugin
// authors never use it directly: package wire implements the server (behind
// sdk.Serve) and worker/pluginhost the client.
package proto
