// Package deploy holds what an operator needs to run the farm — the
// container image (Dockerfile; docker-compose.yml at the repository root) —
// and, in its tests, the same topology with real processes: a real
// nats-server, a real MinIO, a coordinator and two worker processes of the
// msjfarm binary.
package deploy
