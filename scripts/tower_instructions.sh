#!/usr/bin/env bash
# Instructions the tower layer adds per request (exact, one thread): callgrind over N and 3N
# requests of each case of benches/tower_instructions.rs (after 200 unmeasured ones), the
# difference / 2N, each layer's figure minus the plain router's. Usage:
# scripts/tower_instructions.sh [N] [case...]   (default 1000; passthrough sized sentinel governor;
# also identity, nested, norule, and per client identity_peer, hotspot, governor_peer; the client
# layer: client_none, client_norule, client; with the RateLimit fields: sentinel_headers and,
# per client, hotspot_headers). A case measured after its floor (`identity`;
# `identity_peer` for the per-client cases; `client_none` for the client layer's) is also
# printed above that floor: list the floor first.
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
floor=""
floor_peer=""
floor_client=""
for case in "${cases[@]}"; do
    [ "$case" = none ] && continue
    x=$(per_request "$case")
    case $case in
        identity) floor=$x ;;
        identity_peer) floor_peer=$x ;;
        client_none) floor_client=$x ;;
    esac
    over=""
    case $case in
        identity | identity_peer | client_none) ;;
        client | client_*) [ -n "$floor_client" ] && over=$floor_client ;;
        hotspot | hotspot_headers | governor_peer) [ -n "$floor_peer" ] && over=$floor_peer ;;
        *) [ -n "$floor" ] && over=$floor ;;
    esac
    if [ -n "$over" ]; then
        python3 -c "print(f'$case: {$x:.1f} per request, +{$x - $base:.1f} over none, +{$x - $over:.1f} over its floor')"
    else
        python3 -c "print(f'$case: {$x:.1f} per request, +{$x - $base:.1f} over none')"
    fi
done
