#!/usr/bin/env bash
# Peak memory for the inputs that used to make it grow (issue 17):
#
#   - instructions that begin and never end (simulators that never report flushes): N `I`
#     lines, four a cycle, nothing else; the cost of one is the growth of the peak from N/2
#     to N instructions, over N/2. Also with a label and an open stage each.
#   - one instruction with a 100 MB label: 100,000 `L` lines of 1,000 bytes.
#
#   bash kanata-pp/benches/memory.sh [N]    (default 4000000)
#
# Peak memory is GNU time's maximum resident set size, for `--check` and for `.zst` output.
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-4000000}
work=${BENCH_DIR:-/tmp/kanata-memory-bench}
mkdir -p "$work"
cargo build --release -q -p kanata-pp --bin kanata-pp
pp=$PWD/target/release/kanata-pp

# N open instructions; $2 = "plain" (I only) or "busy" (I, L and S each).
open_trace() {
  awk -v n="$1" -v kind="$2" 'BEGIN {
    print "Kanata\t0004"; print "C=\t0";
    for (i = 0; i < n; i++) {
      printf "I\t%d\t%d\t0\n", i, i;
      if (kind == "busy") { printf "L\t%d\t0\tinsn %d\n", i, i; printf "S\t%d\t0\tF\n", i }
      if (i % 4 == 3) print "C\t1";
    }
  }' > "$3"
}

peak() { /usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -1; }

for kind in plain busy; do
  half=$work/open-$kind-half.kanata
  full=$work/open-$kind.kanata
  [ -f "$half" ] || open_trace $((n / 2)) $kind "$half"
  [ -f "$full" ] || open_trace "$n" $kind "$full"
  for mode in check zst; do
    if [ $mode = check ]; then args=(--check); else args=(-o "$work/out.kanata.zst"); fi
    a=$(peak "$pp" -q "$half" "${args[@]}")
    b=$(peak "$pp" -q "$full" "${args[@]}")
    echo "open instructions ($kind, $mode): $((n / 2)): $a KiB, $n: $b KiB: $(( (b - a) * 1024 / (n / 2) )) bytes each"
  done
done

label=$work/label.kanata
if [ ! -f "$label" ]; then
  awk 'BEGIN {
    line = ""; for (i = 0; i < 100; i++) line = line "0123456789";
    print "Kanata\t0004"; print "C=\t0"; print "I\t0\t0\t0"; print "S\t0\t0\tF";
    for (i = 0; i < 100000; i++) printf "L\t0\t1\t%s\n", line;
    print "C\t1"; print "E\t0\t0\tF"; print "R\t0\t0\t0";
  }' > "$label"
fi
for mode in check zst plain; do
  case $mode in
    check) args=(--check) ;;
    zst) args=(-o "$work/label.out.kanata.zst") ;;
    plain) args=(-o "$work/label.out.kanata") ;;
  esac
  echo "100 MB label ($mode): $(peak "$pp" -q "$label" "${args[@]}") KiB"
done
