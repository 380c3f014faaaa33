#!/usr/bin/env bash
# Seekable .kanata.zst benchmark: size and compression time of the seekable file at several
# frame sizes against one zstd frame, the cost of scanning the text for the index, and the
# time to open the index and read one frame. Runs alternate, several rounds (the machine is
# noisy: compare within a round).
#
#   bash kanata-pp/benches/seekable.sh [MB] [ROUNDS]      (default 400 MB of sloppy log, 3)
#
# Needs zstd. The trace is make_sloppy's log converted to canonical text by kanata-pp.
set -euo pipefail
cd "$(dirname "$0")/../.."
mb=${1:-400}
rounds=${2:-3}
work=${BENCH_DIR:-/tmp/kanata-pp-bench}
mkdir -p "$work"
cargo build --release -q -p kanata-pp --bin kanata-pp --example make_sloppy --example seekable_bench
pp=$PWD/target/release/kanata-pp
gen=$PWD/target/release/examples/make_sloppy
bench=$PWD/target/release/examples/seekable_bench

input=$work/sloppy$mb.log
trace=$work/sloppy$mb.kanata
[ -f "$input" ] || "$gen" --mb "$mb" -o "$input"
[ -f "$trace" ] || "$pp" -q "$input" -o "$trace"
cat "$trace" > /dev/null
echo "canonical text: $(stat -c %s "$trace") bytes"

for round in $(seq "$rounds"); do
  echo "round $round"
  for variant in zst 256K 1M 4M; do
    "$bench" compress "$trace" "$variant" "$work/seek-$variant.kanata.zst"
  done
  /usr/bin/env time -f "zstd -3\t%e s" zstd -3 -q -f "$trace" -o "$work/ref.zst" 2>&1
done
echo "zstd -3 (CLI): $(stat -c %s "$work/ref.zst") bytes"
for how in line skim filter; do "$bench" scan "$trace" "$how"; done
for variant in 256K 1M 4M; do
  echo -n "$variant: "
  "$bench" read "$work/seek-$variant.kanata.zst"
done
# The file is a valid zstd file, decoding to the very text.
zstd -d -c -q "$work/seek-1M.kanata.zst" | cmp - "$trace" && echo "zstd -d: the same text"
zstd -l "$work/seek-1M.kanata.zst"
