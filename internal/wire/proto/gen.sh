#!/usr/bin/env bash
# Regenerates policy.pb.go and policy_grpc.pb.go from policy.proto.
#
# Needs protoc (Debian: apt-get install protobuf-compiler). The Go
# generators are installed with `go install` at pinned versions:
# protoc-gen-go at the google.golang.org/protobuf version of go.mod (the
# runtime the generated code links), protoc-gen-go-grpc at a release whose
# generated code needs grpc >= 1.64 (SupportPackageIsVersion9; go.mod has a
# newer grpc). The generated files are committed: building msjfarm needs
# none of this.
set -euo pipefail
cd "$(dirname "$0")"

PROTOC_GEN_GO_GRPC_VERSION=${PROTOC_GEN_GO_GRPC_VERSION:-v1.6.2}
PROTOBUF_VERSION=$(cd ../../.. && go list -m -f '{{.Version}}' google.golang.org/protobuf)

if ! command -v protoc >/dev/null; then
	echo "gen.sh: protoc not found (apt-get install protobuf-compiler)" >&2
	exit 1
fi

BIN=${GOBIN:-$(go env GOPATH)/bin}
GOFLAGS= go install "google.golang.org/protobuf/cmd/protoc-gen-go@${PROTOBUF_VERSION}"
GOFLAGS= go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@${PROTOC_GEN_GO_GRPC_VERSION}"

protoc \
	--plugin=protoc-gen-go="$BIN/protoc-gen-go" \
	--plugin=protoc-gen-go-grpc="$BIN/protoc-gen-go-grpc" \
	--go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative \
	policy.proto
gofmt -l . | (! grep .) || { echo "gen.sh: generated code not gofmt-clean" >&2; exit 1; }
echo "gen.sh: regenerated $(pwd)/policy.pb.go and policy_grpc.pb.go"
