#!/usr/bin/env bash
# Pictures of a window of a huge trace (issue 14), side by side in one run: a
# 1,000-instruction window from the middle of a seekable .zst of at least 1 GB of canonical
# text, drawn as SVG, PNG and text, against the same window converted to canonical Kanata
# (the baseline: reading the window through the index, which every picture does first).
#
#   bash kanata-pp/benches/render.sh [INSNS] [GEM5_MB]    (default 2800000 and 700)
#
# The traces are windows.sh's (kanata-writer's pipeline_sim, and make_gem5's synthetic
# O3PipeView trace converted: an input the renderer was not tuned on); they are made here
# when $BENCH_DIR does not have them yet. A 1,000-instruction PNG at scale 1 is larger than
# the PNG limit (64 million pixels); the PNG is drawn at the scale kanata-pp's own error
# message says fits, and at 0.25. Needs hyperfine, zstd and GNU time.
set -euo pipefail
cd "$(dirname "$0")/../.."
insns=${1:-2800000}
gem5_mb=${2:-700}
work=${BENCH_DIR:-/tmp/kanata-windows-bench}
runs=${RUNS:-10}
mkdir -p "$work"
cargo build --release -q -p kanata-pp --bin kanata-pp --example make_gem5
cargo build --release -q -p kanata-writer --example pipeline_sim
pp=$PWD/target/release/kanata-pp

if [ ! -f "$work/sim.seek.kanata.zst" ]; then
  "$PWD/target/release/examples/pipeline_sim" --insns "$insns" -o "$work/sim.kanata" > /dev/null
  "$pp" -q "$work/sim.kanata" -o "$work/sim.seek.kanata.zst" --seekable
fi
if [ ! -f "$work/gem5.seek.kanata.zst" ]; then
  "$PWD/target/release/examples/make_gem5" --mb "$gem5_mb" -o "$work/gem5.out" > /dev/null
  "$pp" -q "$work/gem5.out" -o "$work/gem5.seek.kanata.zst" --seekable
  rm -f "$work/gem5.out"
fi

for name in sim gem5; do
  trace=$work/$name.seek.kanata.zst
  count=$("$pp" -q --check --report json "$trace" | head -1 | sed 's/.*"instructions":\([0-9]*\).*/\1/')
  mid=$(( count / 2 ))
  window="--insns $mid..$((mid + 1000))"
  echo "== $name: $(zstd -lv "$trace" 2>/dev/null | sed -n 's/^Decompressed Size: *//p') of text, $count instructions; window $window"
  # The scale that fits, from the usage error of a PNG at scale 1.
  fits=$("$pp" -q "$trace" $window -o "$work/r.png" 2>&1 | sed -n 's/.*--scale \([0-9.]*\) fits.*/\1/p' || true)
  fits=${fits:-1}
  echo "PNG scale that fits: $fits"
  hyperfine -N --warmup 2 --runs "$runs" --export-markdown "$work/$name-render.md" \
    -n "window to .kanata (baseline)" "$pp -q $trace $window -o $work/r.kanata" \
    -n "to .svg" "$pp -q $trace $window -o $work/r.svg" \
    -n "to .png --scale $fits" "$pp -q $trace $window --scale $fits -o $work/r.png" \
    -n "to .png --scale 0.25" "$pp -q $trace $window --scale 0.25 -o $work/r25.png" \
    -n "to .txt" "$pp -q $trace $window -o $work/r.txt"
  cat "$work/$name-render.md"
  ls -l "$work/r.svg" "$work/r.png" "$work/r25.png" "$work/r.txt" | awk '{print $5, $9}'
  for out in r.svg r.png r.txt; do
    scale=""
    [ "$out" = r.png ] && scale="--scale $fits"
    /usr/bin/time -f "peak memory, $out: %M KiB" "$pp" -q "$trace" $window $scale -o "$work/m-$out"
    cmp "$work/$out" "$work/m-$out" && echo "  the same bytes again"
  done
done
