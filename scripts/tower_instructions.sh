#!/usr/bin/env bash
# Instructions the tower layer adds per request (exact, one thread): callgrind over N and 3N
# requests of each case of benches/tower_instructions.rs (after 200 unmeasured ones), the
# difference / 2N, each layer's figure minus the plain router's. Usage:
# scripts/tower_instructions.sh [N] [case...]   (default 1000; passthrough sized sentinel governor;
# also identity, nested)
set -euo pipefail
n=${1:-1000}
shift || true
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(passthrough sized sentinel governor)
cd "$(dirname "$0")/.."
. scripts/callgrind.sh
bin=$(bench_binary tower_instructions)
total() {
    callgrind_total "$bin" "tower_instructions::measured" "$1" "$2"
}
per_request() {
    local a b
    a=$(total "$1" "$n")
    b=$(total "$1" $((3 * n)))
    python3 -c "print(($b - $a) / (2 * $n))"
}
base=$(per_request none)
printf 'none: %.1f instructions per request\n' "$base"
for case in "${cases[@]}"; do
    [ "$case" = none ] && continue
    x=$(per_request "$case")
    python3 -c "print(f'$case: {$x:.1f} per request, +{$x - $base:.1f} over none')"
done
