#!/usr/bin/env bash
# Instructions per guarded call (exact, one thread): callgrind over N and 2N calls of each case
# of benches/call_instructions.rs, the difference / N. Usage: scripts/instructions.sh [N]
set -euo pipefail
n=${1:-20000}
cd "$(dirname "$0")/.."
. scripts/callgrind.sh
bin=$(bench_binary call_instructions)
total() {
    callgrind_total "$bin" "call_instructions::guarded_$1" "$1" "$2"
}
for case in qps stats hot param; do
    a=$(total "$case" "$n")
    b=$(total "$case" $((2 * n)))
    python3 -c "print(f'$case: {($b - $a) / $n:.1f} instructions per call ($a at N=$n, $b at 2N)')"
done
