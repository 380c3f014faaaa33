#!/usr/bin/env bash
# kanata-pp conversion benchmark: kanata-pp side by side with the tools its goals are set
# against, on the same input, in one run (ratios are what count: the machine is noisy).
#
#   bash kanata-pp/benches/convert.sh [MB]          (default 150)
#
# Needs hyperfine, zstd, gzip and GNU time (Debian: hyperfine zstd gzip time).
set -euo pipefail
cd "$(dirname "$0")/../.."
mb=${1:-150}
work=${BENCH_DIR:-/tmp/kanata-pp-bench}
mkdir -p "$work"
cargo build --release -q -p kanata-pp --bin kanata-pp --example make_sloppy
pp=$PWD/target/release/kanata-pp
gen=$PWD/target/release/examples/make_sloppy

input=$work/sloppy$mb.log
small=$work/sloppy$((mb / 10)).log
[ -f "$input" ] || "$gen" --mb "$mb" -o "$input"
[ -f "$small" ] || "$gen" --mb $((mb / 10)) -o "$small"
# The normalized text that zstd -3 and gzip -6 compress in the comparison.
"$pp" -q "$input" -o "$work/normalized.kanata"
# Warm the page cache so that every command reads from memory.
cat "$input" "$work/normalized.kanata" > /dev/null

echo "input: $(stat -c %s "$input") bytes; normalized: $(stat -c %s "$work/normalized.kanata") bytes"
hyperfine --warmup 1 --runs 5 --export-markdown "$work/results.md" \
  -n "kanata-pp -> .zst" "$pp -q $input -o $work/out.kanata.zst" \
  -n "zstd -3 (normalized text)" "zstd -3 -q -f $work/normalized.kanata -o $work/ref.zst" \
  -n "kanata-pp -> .gz" "$pp -q $input -o $work/out.kanata.gz" \
  -n "gzip -6 (normalized text)" "gzip -6 -c $work/normalized.kanata > $work/ref.gz" \
  -n "kanata-pp -> plain" "$pp -q $input -o $work/out.kanata" \
  -n "cp (input)" "cp $input $work/copy.log" \
  -n "kanata-pp --check" "$pp -q --check $input"
cat "$work/results.md"

echo
echo "sizes: .zst $(stat -c %s "$work/out.kanata.zst") vs zstd -3 $(stat -c %s "$work/ref.zst");" \
  ".gz $(stat -c %s "$work/out.kanata.gz") vs gzip -6 $(stat -c %s "$work/ref.gz")"
for f in "$input" "$small"; do
  /usr/bin/time -f "peak memory, $(basename "$f") -> .zst: %M KiB" "$pp" -q "$f" -o "$work/mem.kanata.zst"
  /usr/bin/time -f "peak memory, $(basename "$f") --check: %M KiB" "$pp" -q --check "$f"
done

# What two busy threads cost each other on this machine: the .zst conversion runs its
# compressor beside the normalizer, so it can only match zstd -3 alone if compressing beside
# other work is as fast as compressing alone. Two zstd -3 processes at once show how far that
# holds (the second works on a copy, so the two do not share the page cache's pages), and a
# shell's busy loop (next to no memory traffic) whether it is memory or the core itself.
cp "$work/normalized.kanata" "$work/normalized-copy.kanata"
hyperfine --warmup 1 --runs 5 \
  -n "zstd -3 alone" "zstd -3 -q -f $work/normalized.kanata -o $work/ref.zst" \
  -n "two zstd -3 at once" "bash -c 'zstd -3 -q -f $work/normalized.kanata -o $work/ref.zst & zstd -3 -q -f $work/normalized-copy.kanata -o $work/ref-copy.zst; wait'" \
  -n "zstd -3 beside a busy loop" "bash -c 'sh -c \"while :; do :; done\" & spin=\$!; zstd -3 -q -f $work/normalized.kanata -o $work/ref.zst; kill \$spin'"
