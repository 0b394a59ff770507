// Package proto is the generated gRPC contract between an msjfarm worker and
// a policy plugin binary (policy.proto; regenerate with gen.sh). Plugin
// authors never use it directly: sdk.Serve implements the server and the
// worker/pluginhost package the client.
package proto
