#!/usr/bin/env bash
# Benchmarks baton's local API on loopback (a script to run by hand, not a CI
# test). Runs api_bench_server (the HTTP and gRPC servers alone, over a fixed
# published snapshot) and measures:
#   * GET /leader with wrk: 64 connections, 2 threads
#   * gRPC GetLeadership, 64 concurrent calls over 4 connections, twice: with
#     ghz (installed with `go install` if missing) and with api_bench_client's
#     unary mode, a lighter C++ load generator (on 2 cores ghz's own CPU use
#     caps what it can measure)
#   * WatchLeadership fan-out with api_bench_client: 1,000 streams, then
#     handovers; latency from publish to receipt on every stream
#   * the same for GET /leader/watch (Server-Sent Events): 1,000 streams,
#     one connection each, and the same handovers
#   * the server's RSS when idle (before any load) and after the load
# and prints a table next to the targets. Also prints the server's CPU time
# per request, which stays meaningful when the machine is busy with other
# work (throughput and tail latency do not).
#
# Environment: BATON_BUILD (build dir, default build/), DURATION (per load
# test, default 10s), HTTP_THREADS (default 1), WATCHERS (default 1000),
# HANDOVERS (default 20).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$BATON_ROOT"

DURATION=${DURATION:-10s}
HTTP_THREADS=${HTTP_THREADS:-1}
WATCHERS=${WATCHERS:-1000}
HANDOVERS=${HANDOVERS:-20}
GHZ_VERSION=v0.93.0

command -v wrk >/dev/null || die "wrk is required (Debian package wrk)"
log "building api_bench_server and api_bench_client in $BATON_BUILD"
[[ -f $BATON_BUILD/build.ninja ]] || cmake -S . -B "$BATON_BUILD" -G Ninja >/dev/null
cmake --build "$BATON_BUILD" --target api_bench_server api_bench_client >/dev/null

GHZ=${GHZ:-$(command -v ghz || echo "$(go env GOPATH 2>/dev/null)/bin/ghz")}
if [[ ! -x $GHZ ]]; then
  need_go
  log "installing ghz $GHZ_VERSION with go install"
  go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION"
  GHZ=$(go env GOPATH)/bin/ghz
fi

work=$(mktemp -d)
server_pid=""
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$BATON_BUILD/bin/api_bench_server" --http_threads="$HTTP_THREADS" \
  --max_watchers=$((WATCHERS + 100)) --ready_file="$work/ports" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 100); do [[ -f $work/ports ]] && break; sleep 0.1; done
[[ -f $work/ports ]] || die "api_bench_server did not start: $(cat "$work/server.log")"
read -r http_port grpc_port _ <"$work/ports"

rss_kb() { awk '/^VmRSS:/{print $2}' "/proc/$server_pid/status"; }
# Server CPU (user+system) in microseconds so far.
cpu_us() { awk -v hz="$(getconf CLK_TCK)" '{printf "%d", ($14 + $15) * 1e6 / hz}' "/proc/$server_pid/stat"; }
# wrk latency ("812.00us", "1.03ms", "2.00s") in milliseconds.
to_ms() { awk '{v=$1; if (v ~ /us$/) {sub(/us$/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v*=1000}; printf "%.3f", v}'; }

sleep 2
idle_rss=$(rss_kb)
load=$(cut -d' ' -f1-3 /proc/loadavg)

log "wrk: GET /leader, 64 connections, 2 threads, $DURATION"
cpu0=$(cpu_us)
wrk -t2 -c64 -d"$DURATION" --latency "http://127.0.0.1:$http_port/leader" >"$work/wrk.txt"
cpu1=$(cpu_us)
http_rps=$(awk '/^Requests\/sec:/{printf "%.0f", $2}' "$work/wrk.txt")
http_p50=$(awk '$1=="50%"{print $2}' "$work/wrk.txt" | to_ms)
http_p99=$(awk '$1=="99%"{print $2}' "$work/wrk.txt" | to_ms)
http_requests=$(awk '/requests in/{print $1}' "$work/wrk.txt")
http_cpu=$(awk -v c=$((cpu1 - cpu0)) -v n="$http_requests" 'BEGIN{printf "%.1f", c / n}')
grep -q "Non-2xx" "$work/wrk.txt" && die "wrk saw non-2xx answers: $(cat "$work/wrk.txt")"

log "ghz: GetLeadership, 64 concurrent over 4 connections, $DURATION"
cpu0=$(cpu_us)
"$GHZ" --insecure --proto proto/baton/v1/leader_election.proto --import-paths proto,/usr/include \
  --call baton.v1.LeaderElection.GetLeadership -c 64 --connections 4 -z "$DURATION" \
  --format json "127.0.0.1:$grpc_port" >"$work/ghz.json"
cpu1=$(cpu_us)
read -r grpc_rps grpc_p50 grpc_p99 grpc_count grpc_errors < <(python3 - "$work/ghz.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
lat = {d["percentage"]: d["latency"] / 1e6 for d in r["latencyDistribution"]}
errors = sum(r.get("errorDistribution", {}).values()) if r.get("errorDistribution") else 0
print(f'{r["rps"]:.0f} {lat[50]:.3f} {lat[99]:.3f} {r["count"]} {errors}')
PY
)
grpc_cpu=$(awk -v c=$((cpu1 - cpu0)) -v n="$grpc_count" 'BEGIN{printf "%.1f", c / n}')
# ghz -z closes its connections with calls still in flight, which fail with
# "transport is closing"; more than a handful means something else.
((grpc_errors * 1000 <= grpc_count)) || die "ghz saw $grpc_errors errors in $grpc_count calls"

log "api_bench_client: GetLeadership, 64 concurrent over 4 connections, $DURATION"
cpu0=$(cpu_us)
"$BATON_BUILD/bin/api_bench_client" --mode=unary --target="127.0.0.1:$grpc_port" --channels=4 \
  --concurrency=64 --duration="$DURATION" >"$work/unary.txt"
cpu1=$(cpu_us)
# field FILE KEY: the value of KEY=value in FILE.
field() { sed -n "s/.*$2=\([^ ]*\).*/\1/p" "$1"; }
unary_cpu=$(awk -v c=$((cpu1 - cpu0)) -v n="$(field "$work/unary.txt" calls)" 'BEGIN{printf "%.1f", c / n}')

log "WatchLeadership fan-out: $WATCHERS streams, $HANDOVERS handovers"
"$BATON_BUILD/bin/api_bench_client" --target="127.0.0.1:$grpc_port" --watchers="$WATCHERS" \
  --handovers="$HANDOVERS" >"$work/fanout.txt"

log "GET /leader/watch fan-out: $WATCHERS SSE streams, $HANDOVERS handovers"
"$BATON_BUILD/bin/api_bench_client" --mode=sse --http_target="127.0.0.1:$http_port" \
  --target="127.0.0.1:$grpc_port" --watchers="$WATCHERS" --handovers="$HANDOVERS" >"$work/sse.txt"
loaded_rss=$(rss_kb)

printf '\n'
printf 'baton local API benchmark  (%s cores, load average before: %s)\n' "$(nproc)" "$load"
printf '%-44s %-28s %s\n' "measure" "result" "target"
printf '%-44s %-28s %s\n' "GET /leader req/s (wrk, 64 conns, 2 threads)" "$http_rps" ">= 50000"
printf '%-44s %-28s %s\n' "GET /leader p50 / p99 (ms)" "$http_p50 / $http_p99" "p99 < 1"
printf '%-44s %-28s %s\n' "  server CPU per request (us)" "$http_cpu" ""
printf '%-44s %-28s %s\n' "GetLeadership calls/s (ghz, 64 concurrent)" "$grpc_rps" ">= 20000"
printf '%-44s %-28s %s\n' "GetLeadership p50 / p99 (ms)" "$grpc_p50 / $grpc_p99" ""
printf '%-44s %-28s %s\n' "  calls cut off when ghz stops" "$grpc_errors of $grpc_count" ""
printf '%-44s %-28s %s\n' "  server CPU per call (us)" "$grpc_cpu" ""
printf '%-44s %-28s %s\n' "GetLeadership calls/s (C++ client, 64)" "$(field "$work/unary.txt" calls_per_s)" ">= 20000"
printf '%-44s %-28s %s\n' "GetLeadership p50 / p99 (ms)" \
  "$(field "$work/unary.txt" p50_ms) / $(field "$work/unary.txt" p99_ms)" ""
printf '%-44s %-28s %s\n' "  server CPU per call (us)" "$unary_cpu" ""
printf '%-44s %-28s %s\n' "fan-out: $WATCHERS streams all notified (ms)" \
  "p50 $(field "$work/fanout.txt" all_notified_p50_ms), max $(field "$work/fanout.txt" all_notified_max_ms)" "<= 20"
printf '%-44s %-28s %s\n' "fan-out: per-stream latency p50 / p99 (ms)" \
  "$(field "$work/fanout.txt" stream_p50_ms) / $(field "$work/fanout.txt" stream_p99_ms)" ""
printf '%-44s %-28s %s\n' "SSE fan-out: $WATCHERS streams all told (ms)" \
  "p50 $(field "$work/sse.txt" all_notified_p50_ms), p99 $(field "$work/sse.txt" all_notified_p99_ms), max $(field "$work/sse.txt" all_notified_max_ms)" "<= 20"
printf '%-44s %-28s %s\n' "SSE fan-out: per-stream latency p50 / p99 (ms)" \
  "$(field "$work/sse.txt" stream_p50_ms) / $(field "$work/sse.txt" stream_p99_ms)" ""
printf '%-44s %-28s %s\n' "server RSS idle / after load (MB)" \
  "$(awk -v a="$idle_rss" -v b="$loaded_rss" 'BEGIN{printf "%.1f / %.1f", a/1024, b/1024}')" "< 15 idle"
