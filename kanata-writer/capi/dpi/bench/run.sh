#!/usr/bin/env bash
# run.sh OBJ_DIR ROUNDS N: the DPI micro-benchmark's rounds, side by side (see Makefile).
# run.sh --instructions OBJ_DIR: instructions executed per traced instruction, C and DPI,
#   counted by valgrind (callgrind): the run with 40,000 instructions minus the one with
#   20,000, so the setup cancels out. Slow (a minute) but the same on a busy machine.
#
# First checks that both sides make the same calls: each writes one round of N instructions
# to a file, and the two files must be the same bytes. Then ROUNDS times, alternating C and
# DPI processes (each the median of 5 timed rounds after a warm-up), three pairs of variants:
# the calls into a writer (to /dev/null), the same on the NULL writer / handle 0 (the cost of
# the calls alone), and into a writer without the label call (the one with a string).
# Prints every round, then the medians and the ratio DPI / C of each pair, with the per-round
# ratios.
set -euo pipefail

if [ "${1:-}" = --instructions ]; then
    obj=${2:?OBJ_DIR}
    ir() {
        valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
            sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
    }
    echo "instructions executed per traced instruction (10.25 calls each, 9.25 without label):"
    for v in writer null nolabel; do
        case $v in
            writer) c_args=(); dpi_args=() ;;
            null) c_args=(null); dpi_args=(+null) ;;
            nolabel) c_args=(nolabel); dpi_args=(+nolabel) ;;
        esac
        # One warm-up round and one timed round: two traces of n instructions per process.
        c=$(( ($(ir "$obj/bench_c" 40000 1 /dev/null "${c_args[@]}") -
               $(ir "$obj/bench_c" 20000 1 /dev/null "${c_args[@]}")) / 40000 ))
        d=$(( ($(ir "$obj/Vbench" +n=40000 +rounds=1 "${dpi_args[@]}") -
               $(ir "$obj/Vbench" +n=20000 +rounds=1 "${dpi_args[@]}")) / 40000 ))
        printf '  %-8s c_abi %5d  dpi %5d  dpi/c %s\n' "$v" "$c" "$d" \
            "$(awk -v c="$c" -v d="$d" 'BEGIN { printf "%.2fx", d / c }')"
    done
    exit 0
fi

obj=${1:?OBJ_DIR}
rounds=${2:-9}
n=${3:-200000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$obj/bench_c" "$n" 1 "$tmp/c.kanata" > /dev/null
"$obj/Vbench" +n="$n" +rounds=1 +out="$tmp/dpi.kanata" > /dev/null
cmp "$tmp/c.kanata" "$tmp/dpi.kanata"
echo "same trace from both sides: $(wc -c < "$tmp/c.kanata") bytes, $n instructions"

value() { sed -n 's/.*replay=\([0-9.]*\).*/\1/p'; }
variants=(writer null nolabel)
for ((r = 0; r < rounds; r++)); do
    line="round $r:"
    for v in "${variants[@]}"; do
        case $v in
            writer) c_args=(); dpi_args=() ;;
            null) c_args=(null); dpi_args=(+null) ;;
            nolabel) c_args=(nolabel); dpi_args=(+nolabel) ;;
        esac
        c=$("$obj/bench_c" "$n" 5 /dev/null "${c_args[@]}" | value)
        d=$("$obj/Vbench" +n="$n" +rounds=5 "${dpi_args[@]}" | value)
        echo "$c $d" >> "$tmp/$v"
        line+="  $v c $c dpi $d"
    done
    echo "$line (ns per call)"
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo
echo "medians over $rounds rounds, ns per call:"
for v in "${variants[@]}"; do
    c=$(cut -d' ' -f1 "$tmp/$v" | median)
    d=$(cut -d' ' -f2 "$tmp/$v" | median)
    ratios=$(awk '{ printf "%.2f ", $2 / $1 }' "$tmp/$v")
    printf '  %-8s c_abi %6.2f  dpi %6.2f  dpi/c %.2fx  (rounds: %s)\n' "$v" "$c" "$d" \
        "$(awk -v c="$c" -v d="$d" 'BEGIN { print d / c }')" "$ratios"
done
