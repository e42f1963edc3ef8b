#!/usr/bin/env bash
# Instructions per guarded call (exact, one thread): callgrind over N and 2N calls of each case
# of benches/call_instructions.rs, the difference / N. Usage: scripts/instructions.sh [N]
set -euo pipefail
n=${1:-20000}
cd "$(dirname "$0")/.."
# A plain `cargo bench` build, whatever the environment asks: an incremental build's many code
# generation units move the inlining, and the counts with it, with unrelated edits.
export CARGO_INCREMENTAL=0
bin=$(cargo bench --bench call_instructions --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "call_instructions" and m.get("executable"):
        print(m["executable"])')
total() {
    local out
    out=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$out" \
        --toggle-collect="call_instructions::guarded_$1" "$bin" "$1" "$2" >/dev/null 2>&1
    callgrind_annotate "$out" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
    rm -f "$out"
}
for case in qps stats hot; do
    a=$(total "$case" "$n")
    b=$(total "$case" $((2 * n)))
    python3 -c "print(f'$case: {($b - $a) / $n:.1f} instructions per call ($a at N=$n, $b at 2N)')"
done
