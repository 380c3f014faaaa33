#!/usr/bin/env bash
# kanata-pp normalizer benchmark (issue 20): kanata-pp side by side with the tools its goals
# are set against, on three inputs made from MB megabytes, each in one run (ratios are what
# count: the machine is noisy):
#
#   - sloppy: make_sloppy's log (fixed-width padding, no `E`, `C 1` per cycle, comments);
#   - padded: make_padded's log (most lines padded, split and absolute cycle lines, a
#     quarter of the lines space-separated, lanes written `00` or `+1`);
#   - canonical: make_gem5's MB-megabyte trace converted to plain `.kanata` (nothing to
#     repair; larger than MB).
#
#   bash kanata-pp/benches/normalize.sh [MB] [OTHER_KANATA_PP_BINARIES...]   (default 150)
#
# Each extra binary (an older build, say) runs the same kanata-pp commands in the same
# hyperfine run, labelled by its file name. After each input it prints the ratios the issue's
# goals are stated in: --check / zstd -3 -T1 (goal <= 0.25), plain / cp (<= 4), .zst /
# zstd -3 -T1 (<= 1.0), and --check in MB/s; then the peak memory of --check and .zst.
# RUNS (default 5) sets hyperfine's runs; inputs are cached and results written in
# BENCH_DIR (default /tmp/kanata-pp-bench); builds go to CARGO_TARGET_DIR (default target/).
#
# Needs hyperfine, zstd, gzip, python3 and GNU time (Debian: hyperfine zstd gzip time).
set -euo pipefail
cd "$(dirname "$0")/../.."
mb=${1:-150}
[ $# -gt 0 ] && shift
runs=${RUNS:-5}
work=${BENCH_DIR:-/tmp/kanata-pp-bench}
mkdir -p "$work"
for tool in hyperfine zstd gzip python3 /usr/bin/time; do
  command -v "$tool" > /dev/null || { echo "normalize.sh: $tool is missing" >&2; exit 1; }
done
cargo build --release -q -p kanata-pp --bin kanata-pp \
  --example make_sloppy --example make_padded --example make_gem5
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
pp=$target/release/kanata-pp
examples=$target/release/examples

# The binaries to time, and their labels: this build's kanata-pp, then the extra ones by file
# name (made unique if two share one).
bins=("$pp")
labels=(kanata-pp)
for bin in "$@"; do
  [ -x "$bin" ] || { echo "normalize.sh: $bin is not an executable" >&2; exit 1; }
  label=$(basename "$bin")
  for used in "${labels[@]}"; do
    [ "$used" != "$label" ] || label="$label[${#labels[@]}]"
  done
  bins+=("$(realpath "$bin")")
  labels+=("$label")
done

# The inputs, made once (through a partial file, so an interrupted run leaves none behind).
sloppy=$work/sloppy$mb.log
padded=$work/padded$mb.log
canonical=$work/canonical$mb.kanata
[ -f "$sloppy" ] || { "$examples/make_sloppy" --mb "$mb" -o "$sloppy.partial" && mv "$sloppy.partial" "$sloppy"; }
[ -f "$padded" ] || { "$examples/make_padded" --mb "$mb" -o "$padded.partial" && mv "$padded.partial" "$padded"; }
if [ ! -f "$canonical" ]; then
  "$examples/make_gem5" --mb "$mb" -o "$work/gem5-$mb.out"
  "$pp" -q --compress none "$work/gem5-$mb.out" -o "$canonical.partial"
  mv "$canonical.partial" "$canonical"
  rm "$work/gem5-$mb.out"
fi

# ratios JSON BYTES LABELS...: the goals' ratios from hyperfine's JSON export.
ratios() {
  python3 - "$@" << 'EOF'
import json
import sys

path, size, *labels = sys.argv[1:]
mean = {r["command"]: r["mean"] for r in json.load(open(path))["results"]}
zstd = mean["zstd -3 -T1 (normalized text)"]
gzip = mean["gzip -6 (normalized text)"]
cp = mean["cp (input)"]


def goal(value, limit):
    return f"{value:6.2f} {'ok' if value <= limit else 'no'}"


print(f"{'':24} {'--check/zstd':>14} {'plain/cp':>10} {'.zst/zstd':>11} {'.gz/gzip':>9}"
      f" {'--check MB/s':>13}")
print(f"{'(goal)':24} {'<= 0.25':>14} {'<= 4':>10} {'<= 1.0':>11} {'':>9} {'':>13}")
for label in labels:
    check = mean[f"{label} --check"]
    print(f"{label:24} {goal(check / zstd, 0.25):>14}"
          f" {goal(mean[f'{label} -> plain'] / cp, 4):>10}"
          f" {goal(mean[f'{label} -> .zst'] / zstd, 1.0):>11}"
          f" {mean[f'{label} -> .gz'] / gzip:9.2f}"
          f" {int(size) / check / 1e6:13.0f}")
EOF
}

summary=""
for name in sloppy padded canonical; do
  case $name in
    sloppy) input=$sloppy ;;
    padded) input=$padded ;;
    canonical) input=$canonical ;;
  esac
  # The normalized text that zstd -3 and gzip -6 compress in the comparison.
  normalized=$work/normalized-$name$mb.kanata
  "$pp" -q "$input" -o "$normalized"
  # Warm the page cache so that every command reads from memory, and write the normalized
  # text out first: its pages being flushed to disk made the first command timed slower.
  cat "$input" "$normalized" > /dev/null
  sync
  size=$(stat -c %s "$input")
  echo
  echo "== $name: input $size bytes; normalized $(stat -c %s "$normalized") bytes"
  # Whichever command hyperfine times first ran slower, its system time up to twice the
  # others' (the machine settling after writing the normalized text): a throwaway first
  # command takes that, and its figures are not used. The slow spell lasted longer than
  # that command's runs on the canonical trace (twice in the twenty-sixth session: the first
  # binary's --check at 1.4x the second's, where alternating runs found it 0.96x), so a few
  # more runs go before hyperfine.
  for _ in 1 2 3 4 5 6 7 8 9 10; do "${bins[0]}" -q --check "$input"; done
  commands=(-n "(settling, not used)" "${bins[0]} -q --check $input")
  for i in "${!bins[@]}"; do
    bin=${bins[$i]} label=${labels[$i]}
    commands+=(
      -n "$label --check" "$bin -q --check $input"
      -n "$label -> plain" "$bin -q $input -o $work/nz-out.kanata"
      -n "$label -> .zst" "$bin -q $input -o $work/nz-out.kanata.zst"
      -n "$label -> .gz" "$bin -q $input -o $work/nz-out.kanata.gz"
    )
  done
  # gzip -k writes $normalized.gz (a file, as the others write one; hyperfine drops stdout).
  commands+=(
    -n "zstd -3 -T1 (normalized text)" "zstd -3 -T1 -q -f $normalized -o $work/nz-ref.zst"
    -n "gzip -6 (normalized text)" "gzip -6 -k -f $normalized"
    -n "cp (input)" "cp $input $work/nz-copy"
  )
  hyperfine -N --warmup 1 --runs "$runs" \
    --export-markdown "$work/normalize-$name.md" --export-json "$work/normalize-$name.json" \
    "${commands[@]}"
  cat "$work/normalize-$name.md"
  echo
  echo "sizes: .zst $(stat -c %s "$work/nz-out.kanata.zst") vs zstd -3 $(stat -c %s "$work/nz-ref.zst");" \
    ".gz $(stat -c %s "$work/nz-out.kanata.gz") vs gzip -6 $(stat -c %s "$normalized.gz")"
  table=$(ratios "$work/normalize-$name.json" "$size" "${labels[@]}")
  echo "$table"
  summary+=$'\n'"== $name ($size bytes)"$'\n'"$table"
  for i in "${!bins[@]}"; do
    bin=${bins[$i]} label=${labels[$i]}
    /usr/bin/time -f "peak memory, $label --check: %M KiB" "$bin" -q --check "$input"
    /usr/bin/time -f "peak memory, $label -> .zst: %M KiB" "$bin" -q "$input" -o "$work/nz-mem.kanata.zst"
  done
  rm -f "$work/nz-out.kanata" "$work/nz-out.kanata.zst" "$work/nz-out.kanata.gz" \
    "$work/nz-ref.zst" "$normalized.gz" "$work/nz-copy" "$work/nz-mem.kanata.zst"
done

echo
echo "== summary ($mb MB inputs, $runs runs)$summary"
