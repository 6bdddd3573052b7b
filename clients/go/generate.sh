#!/usr/bin/env bash
# Regenerates batonv1/*.pb.go from ../../proto/baton/v1/*.proto with pinned
# versions of protoc-gen-go and protoc-gen-go-grpc (installed with
# `go install` into $BATON_GOBIN, default ~/.cache/baton/gobin) and the
# machine's protoc (Debian: protobuf-compiler). Run it after changing the
# proto; the generated files are committed, as Go modules do.
#
#   ./generate.sh [OUT]   OUT defaults to this directory; the tests generate
#                         into a temporary one and compare.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2
MODULE=github.com/baton-sidecar/baton/clients/go

out=${1:-.}
bin=${BATON_GOBIN:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/gobin}
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
GOBIN=$bin go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
GOBIN=$bin go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"

protos=(baton/v1/leader_election.proto)
# The proto declares no go_package; map it here so the schema stays neutral.
maps=()
for p in "${protos[@]}"; do maps+=("M$p=$MODULE/batonv1"); done
IFS=, ; mopts="${maps[*]}"; unset IFS

protoc -I ../../proto \
  --plugin=protoc-gen-go="$bin/protoc-gen-go" \
  --plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" \
  --go_out="$out" --go_opt="module=$MODULE,$mopts" \
  --go-grpc_out="$out" --go-grpc_opt="module=$MODULE,$mopts" \
  "${protos[@]}"
