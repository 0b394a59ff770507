// Package e2e holds the whole-system tests: the deployment topology of
// deploy/ and docker-compose.yml reproduced with real processes — a real
// nats-server, a real MinIO, a coordinator and worker processes of the
// msjfarm binary — plus checks that the manifests name only commands, flags
// and variables the binary has, and the farm's overhead benchmark.
package e2e
