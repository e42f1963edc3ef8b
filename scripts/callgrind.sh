# Shared by scripts/instructions.sh and scripts/tower_instructions.sh (sourced, not run).
#
# bench_binary NAME: builds `benches/NAME.rs` as a plain `cargo bench -p sentinel-benches` does (not incremental:
# an incremental build's code generation units move the inlining, and the counts with it, with
# unrelated edits) and prints the executable's path.
# callgrind_total BIN TOGGLE ARGS...: the instructions BIN runs inside the functions TOGGLE
# matches (callgrind's --toggle-collect), run with ARGS.

bench_binary() {
    CARGO_INCREMENTAL=0 cargo bench -p sentinel-benches --bench "$1" --no-run --message-format=json 2>/dev/null \
        | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == sys.argv[1] and m.get("executable"):
        print(m["executable"])' "$1"
}

callgrind_total() {
    local bin=$1 toggle=$2 out
    shift 2
    out=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect="$toggle" \
        "$bin" "$@" >/dev/null 2>&1
    callgrind_annotate "$out" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
    rm -f "$out"
}
