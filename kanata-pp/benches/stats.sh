#!/usr/bin/env bash
# `--check` and `--stats` of builds side by side (issue 19's figures in BENCHMARKS.md):
# alternating, three rounds, wall (user) seconds from GNU time, on three inputs that are
# not tuned for the analysis: make_sloppy's log and make_gem5's trace, both converted to
# canonical Kanata, and the gem5 trace as gem5 prints it.
#
#   bash kanata-pp/benches/stats.sh OLD_KANATA_PP [MORE_BUILDS...]
#
# The tree's release build is measured last in each round. Build an older commit with
# `git worktree add /tmp/wt REV && cargo build --release --manifest-path /tmp/wt/Cargo.toml`.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 OLD_KANATA_PP [MORE_BUILDS...]" >&2; exit 2; }
work=${BENCH_DIR:-/tmp/kanata-stats-bench}
mkdir -p "$work"
cargo build --release -q -p kanata-pp --bin kanata-pp --example make_sloppy --example make_gem5
pp=$PWD/target/release/kanata-pp
builds=("$@" "$pp")

[ -s "$work/sloppy.kanata" ] || {
  target/release/examples/make_sloppy --mb 150 -o "$work/sloppy.log"
  "$pp" "$work/sloppy.log" -o "$work/sloppy.kanata"
}
[ -s "$work/gem5.kanata" ] || {
  target/release/examples/make_gem5 --mb 150 -o "$work/gem5.out"
  "$pp" "$work/gem5.out" -o "$work/gem5.kanata"
}

for round in 1 2 3; do
  for input in sloppy.kanata gem5.kanata gem5.out; do
    for mode in --check --stats; do
      for build in "${builds[@]}"; do
        /usr/bin/time -f "$round $input $mode $build %e (%U)" \
          "$build" "$mode" "$work/$input" 2>&1 >/dev/null | tail -1
      done
    done
  done
done | sort -k2,2 -k3,3 -k4,4 -s
