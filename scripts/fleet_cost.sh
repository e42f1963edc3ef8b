#!/usr/bin/env bash
# The fleet's cost on Redis: N instance processes (each with R resources besides its limited
# one) on one local redis-server for S seconds; prints Redis's commands, bytes in and out and CPU
# per second over the last half of the run, the fleet hash's memory, and the instances' RSS.
# Usage: scripts/fleet_cost.sh [N=50] [R=1000] [S=20]. Needs redis-server and redis-cli.
set -euo pipefail
n=${1:-50}; r=${2:-1000}; s=${3:-20}
cd "$(dirname "$0")/.."
cargo build -q --release -p sentinel-integration --bin cluster_instance
bin=${CARGO_TARGET_DIR:-target}/release/cluster_instance
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >/dev/null &
redis_pid=$!
pids=()
cleanup() { kill "${pids[@]}" "$redis_pid" 2>/dev/null || true; }
trap cleanup EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
for _ in $(seq "$n"); do
    (echo go; sleep $((s + 5))) | "$bin" --redis "redis://127.0.0.1:$port" --namespace cost \
        --threshold 100000 --offer 10 --secs "$s" --resources "$r" >/dev/null &
    pids+=($!)
done
sleep $((s / 2))
stat() { redis-cli -p "$port" info "$1" | tr -d '\r' | awk -F: -v k="$2" '$1==k {print $2}'; }
c0=$(stat stats total_commands_processed); i0=$(stat stats total_net_input_bytes)
o0=$(stat stats total_net_output_bytes); u0=$(stat cpu used_cpu_user); y0=$(stat cpu used_cpu_sys)
t0=$(date +%s.%N)
sleep $((s / 2 - 1))
c1=$(stat stats total_commands_processed); i1=$(stat stats total_net_input_bytes)
o1=$(stat stats total_net_output_bytes); u1=$(stat cpu used_cpu_user); y1=$(stat cpu used_cpu_sys)
t1=$(date +%s.%N)
# The fleet's index and its summaries (one key each).
fleet_mem=$(redis-cli -p "$port" --scan --pattern 'cost:fleet:*' | while read -r k; do
    redis-cli -p "$port" memory usage "$k"; done | awk '{s+=$1} END {print s+0}')
rss=$(ps -o rss= -p "$(IFS=,; echo "${pids[*]}")" 2>/dev/null | awk '{s+=$1; n++} END {if (n) printf "%.0f", s/n}')
python3 - "$n" "$r" "$c0" "$c1" "$i0" "$i1" "$o0" "$o1" "$u0" "$u1" "$y0" "$y1" "$t0" "$t1" "$fleet_mem" "${rss:-0}" <<'PY'
import sys
n, r, c0, c1, i0, i1, o0, o1, u0, u1, y0, y1, t0, t1, mem, rss = sys.argv[1:]
dt = float(t1) - float(t0)
n = int(n)
print(f"{n} instances x {r} resources, over {dt:.1f} s:")
print(f"  redis commands/s {(int(c1) - int(c0)) / dt:.0f} ({(int(c1) - int(c0)) / dt / n:.1f} per instance)")
print(f"  bytes in/s {(int(i1) - int(i0)) / dt:.0f} ({(int(i1) - int(i0)) / dt / n:.0f} per instance)")
print(f"  bytes out/s {(int(o1) - int(o0)) / dt:.0f} ({(int(o1) - int(o0)) / dt / n:.0f} per instance)")
print(f"  redis CPU {100 * ((float(u1) - float(u0)) + (float(y1) - float(y0))) / dt:.1f}% of a core")
print(f"  the fleet's keys: {int(mem)} bytes ({int(mem) / n:.0f} per instance)")
print(f"  instance RSS (mean): {int(rss) / 1024:.1f} MiB")
PY
