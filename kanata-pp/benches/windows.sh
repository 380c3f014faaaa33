#!/usr/bin/env bash
# Windows and seekable output (issue 13), side by side in one run on traces of at least
# 1 GB of canonical text:
#
#   - conversion to one-frame .zst and to seekable .zst (time, size);
#   - a 10,000-cycle window from the middle: seekable file (through its index) against the
#     one-frame .zst (which must decompress and convert everything up to the window);
#   - a window near the start of the one-frame file: the same window from the whole file and
#     from its first tenth, which take the same time when the cost is the window's;
#   - peak memory of each;
#   - the frame size trade-off: file size against window time.
#
#   bash kanata-pp/benches/windows.sh [INSNS] [GEM5_MB]    (default 2800000 and 700)
#
# The traces: kanata-writer's pipeline_sim (a 2-thread out-of-order core; INSNS instructions
# make about 380 bytes of text each) and make_gem5's synthetic O3PipeView trace, converted
# (an input the window code was not tuned on). Needs hyperfine, zstd and GNU time.
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
sim=$PWD/target/release/examples/pipeline_sim
gem5=$PWD/target/release/examples/make_gem5

sim_text=$work/sim.kanata
gem5_text=$work/gem5.kanata
[ -f "$sim_text" ] || "$sim" --insns "$insns" -o "$sim_text" > /dev/null
if [ ! -f "$gem5_text" ]; then
  "$gem5" --mb "$gem5_mb" -o "$work/gem5.out" > /dev/null
  "$pp" -q "$work/gem5.out" -o "$gem5_text"
  rm -f "$work/gem5.out"
fi

# The last cycle of a canonical trace, from its report.
last_cycle() {
  "$pp" -q --check --report json "$1" | head -1 | sed 's/.*"last_cycle":\([-0-9]*\).*/\1/'
}
first_cycle() {
  "$pp" -q --check --report json "$1" | head -1 | sed 's/.*"first_cycle":\([-0-9]*\).*/\1/'
}

for name in sim gem5; do
  text=$work/$name.kanata
  echo "== $name: $(stat -c %s "$text") bytes of canonical text"
  cat "$text" > /dev/null
  hyperfine -N --warmup 1 --runs 3 --export-markdown "$work/$name-convert.md" \
    -n "one frame .zst" "$pp -q $text -o $work/$name.kanata.zst" \
    -n "seekable .zst" "$pp -q $text -o $work/$name.seek.kanata.zst --seekable"
  cat "$work/$name-convert.md"
  one=$(stat -c %s "$work/$name.kanata.zst")
  seek=$(stat -c %s "$work/$name.seek.kanata.zst")
  echo "sizes: one frame $one, seekable $seek ($(awk "BEGIN{printf \"%+.2f\", ($seek/$one-1)*100}") %)"
  zstd -dc -q "$work/$name.seek.kanata.zst" | cmp - "$text" && echo "zstd -d of the seekable file: the same text"

  # Konata's cycles run from 0; the middle 10,000 of them.
  span=$(( $(last_cycle "$text") - $(first_cycle "$text") ))
  mid=$(( span / 2 ))
  window="--cycles $mid..$((mid + 10000))"
  echo "window from the middle: $window"
  hyperfine -N --warmup 2 --runs "$runs" --export-markdown "$work/$name-middle.md" \
    -n "seekable, through the index" "$pp -q $work/$name.seek.kanata.zst $window -o $work/w-seek.kanata" \
    -n "one frame .zst" "$pp -q $work/$name.kanata.zst $window -o $work/w-one.kanata"
  cat "$work/$name-middle.md"
  cmp "$work/w-seek.kanata" "$work/w-one.kanata" && echo "the same window bytes both ways ($(stat -c %s "$work/w-seek.kanata") bytes)"
  for f in seek.kanata.zst kanata.zst; do
    /usr/bin/time -f "peak memory, $f: %M KiB" "$pp" -q "$work/$name.$f" $window -o "$work/w.kanata"
  done

  # Near the start: the whole file against its first tenth (cut at a line end).
  head -c $(( $(stat -c %s "$text") / 10 )) "$text" | sed '$d' > "$work/$name-tenth.kanata"
  "$pp" -q "$work/$name-tenth.kanata" -o "$work/$name-tenth.kanata.zst"
  start="--cycles 1000..11000"
  hyperfine -N --warmup 2 --runs "$runs" --export-markdown "$work/$name-start.md" \
    -n "one frame .zst, whole file" "$pp -q $work/$name.kanata.zst $start -o $work/s-whole.kanata" \
    -n "one frame .zst, first tenth" "$pp -q $work/$name-tenth.kanata.zst $start -o $work/s-tenth.kanata" \
    -n "seekable, whole file" "$pp -q $work/$name.seek.kanata.zst $start -o $work/s-seek.kanata"
  cat "$work/$name-start.md"
  cmp "$work/s-whole.kanata" "$work/s-tenth.kanata" && cmp "$work/s-whole.kanata" "$work/s-seek.kanata" \
    && echo "the same window bytes from all three"
done

# Frame size: file size against the window's time (the pipeline_sim trace).
text=$work/sim.kanata
span=$(( $(last_cycle "$text") - $(first_cycle "$text") ))
mid=$(( span / 2 ))
window="--cycles $mid..$((mid + 10000))"
echo "== frame size (sim, window $window)"
commands=()
for size in 64k 256k 1M 4M; do
  "$pp" -q "$text" -o "$work/sim-$size.kanata.zst" --seekable --frame-size "$size"
  echo "frame $size: $(stat -c %s "$work/sim-$size.kanata.zst") bytes"
  commands+=(-n "frame $size" "$pp -q $work/sim-$size.kanata.zst $window -o $work/f-$size.kanata")
done
hyperfine -N --warmup 2 --runs "$runs" --export-markdown "$work/frames.md" "${commands[@]}"
cat "$work/frames.md"
