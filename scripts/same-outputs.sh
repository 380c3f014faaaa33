#!/usr/bin/env bash
# same-outputs.sh: proves that a refactor changed no byte of kanata-pp's outputs.
#
# It builds the kanata-pp binary (release) of a base revision in a throw-away git worktree,
# and the binary of the current work tree, runs both over the same inputs with the same flags
# and compares, byte for byte, per case: the files written, stdout, stderr and the exit code.
# It prints one line per difference and a summary (`N cases, all identical` or `M of N
# differ`), and exits 1 if any case differs.
#
# Usage (from anywhere in the repository):
#
#   bash scripts/same-outputs.sh [OPTIONS] [BASE_REV]
#
#   BASE_REV            the revision to compare against (default 1f25389, the last commit
#                       before the kanata-pp layout refactor; later refactors pass their own)
#   --current-rev REV   compare against REV built in a second worktree instead of the work
#                       tree (e.g. BASE_REV itself, to check this script when the work tree
#                       does not build, or an older revision to see real differences)
#   --self-test         after the runs, plant four differences in the current side (a byte of
#                       an output file, of a stderr, of a stdout, and an exit code, each in a
#                       case that was identical) and check that each is reported as what it
#                       is; exits 0 when they are and no other case differs
#   --keep              keep the temporary folder (inputs and both sides' outputs); it is
#                       kept anyway when a real difference is found
#   -j N                cases run at once (default: the number of cores)
#   -h, --help          this text
#
#   Environment: SAME_OUTPUTS_TARGET_DIR=DIR reuses DIR as the CARGO_TARGET_DIR of the
#   worktree builds (dependencies are then not compiled again on the next run; never point it
#   at the work tree's own target/). CASE_TIMEOUT=SECONDS limits each run (default 120; a
#   run killed by it exits 124). TMPDIR says where the temporary folder goes.
#
# The inputs: every file under ../shared/corpus (when it exists), every trace in samples/,
# inputs written by the base revision's generators (kanata-pp/examples/make_sloppy.rs,
# make_padded.rs, make_gem5.rs, make_rsd.rs: a few MB each plus small variants), and inputs
# made here: cut, damaged, non-UTF-8, truncated gzip/zstd, gem5 dialects (BOOM events, RTL
# prefixes, spaced colons, old retire lines), empty and not-a-trace files, weird file names. Each is run with
# about twenty flag sets (plain, .gz and .zst output, --check, --stats, --report json, -v,
# --strict, the clean-ups, forced --from, the gem5 and RSD options, stdin to stdout); then come
# default output names, existing outputs, usage errors, --help/--version/completions/man page,
# and batch runs over a folder with -d and -j 2.
#
# Needs: git, cargo, bash 4+, perl, gzip, GNU coreutils (timeout) and sed; zstd (the CLI) is
# used when present. About 1,500 cases; 2-3.5 minutes on 2 cores, two thirds of it the
# release builds (the cases themselves take about half a minute).
set -euo pipefail

BASE_REV=1f25389
CURRENT_REV=
SELF_TEST=0
KEEP=0
JOBS=$(nproc 2>/dev/null || echo 2)

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

while (($#)); do
    case $1 in
        --current-rev) CURRENT_REV=${2:?--current-rev needs a revision}; shift 2 ;;
        --self-test) SELF_TEST=1; shift ;;
        --keep) KEEP=1; shift ;;
        -j) JOBS=${2:?-j needs a number}; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        -*) echo "same-outputs: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) BASE_REV=$1; shift ;;
    esac
done

REPO=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
cd "$REPO"
# Nothing here reads the terminal; rustc's target probe (`rustc -`) must not read our stdin.
exec </dev/null
export LC_ALL=C

STARTED=$SECONDS
T=$(mktemp -d "${TMPDIR:-/tmp}/same-outputs.XXXXXX")
WORKTREES=()
FOUND_DIFF=0
cleanup() {
    local wt
    for wt in "${WORKTREES[@]}"; do
        git -C "$REPO" worktree remove --force "$wt" >/dev/null 2>&1 || true
    done
    if ((KEEP || FOUND_DIFF)); then
        rm -rf "$T/wt-"* "$T/target"
        echo "same-outputs: inputs and outputs kept in $T (run/base, run/cur, cases)" >&2
    else
        rm -rf "$T"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf 'same-outputs: %s\n' "$*" >&2; }

# cargo_build DIR TARGET_DIR ARGS...: builds in DIR (with CARGO_TARGET_DIR=TARGET_DIR unless
# that is empty) and prints the paths of the executables it made.
cargo_build() {
    local dir=$1 target=$2
    shift 2
    (
        cd "$dir"
        [[ -z $target ]] || export CARGO_TARGET_DIR=$target
        cargo build --release --locked --message-format=json-render-diagnostics "$@"
    ) | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p'
}

# build_rev REV NAME [EXAMPLES...]: builds kanata-pp (and the named examples) of REV in a
# worktree $T/wt-NAME and copies the executables to $T/bin/NAME/.
build_rev() {
    local rev=$1 name=$2
    shift 2
    local wt=$T/wt-$name commit
    commit=$(git rev-parse --verify --quiet "$rev^{commit}") || {
        say "unknown revision $rev"
        exit 2
    }
    say "building $name = $rev (${commit:0:12}) in a worktree"
    git worktree add --detach --quiet "$wt" "$commit"
    WORKTREES+=("$wt")
    local args=(-p kanata-pp --bin kanata-pp) ex
    for ex in "$@"; do
        [[ -f $wt/kanata-pp/examples/$ex.rs ]] && args+=(--example "$ex")
    done
    mkdir -p "$T/bin/$name"
    local exe
    exe=$(cargo_build "$wt" "${SAME_OUTPUTS_TARGET_DIR:-$T/target}" "${args[@]}") || {
        say "$rev does not build"
        exit 2
    }
    # Copies: a later build (or someone's cargo run) cannot change them during the runs.
    while read -r exe; do cp "$exe" "$T/bin/$name/"; done <<<"$exe"
}

build_rev "$BASE_REV" base make_sloppy make_padded make_gem5 make_rsd
if [[ -n $CURRENT_REV ]]; then
    build_rev "$CURRENT_REV" cur
    CUR_WHAT="revision $CURRENT_REV"
else
    say "building cur = the work tree ($REPO)"
    exe=$(cargo_build "$REPO" "" -p kanata-pp | grep '/kanata-pp$') || {
        say "the work tree does not build; compare two revisions with --current-rev REV"
        exit 2
    }
    mkdir -p "$T/bin/cur"
    cp "$exe" "$T/bin/cur/"
    CUR_WHAT="the work tree"
fi
BASE_BIN=$T/bin/base/kanata-pp
CUR_BIN=$T/bin/cur/kanata-pp
say "builds done in $((SECONDS - STARTED)) s"

# ---------------------------------------------------------------------------------------
# Inputs, all under $T/in.
# ---------------------------------------------------------------------------------------
IN=$T/in
mkdir -p "$IN"/{corpus,samples,gen,made,batch}
INPUTS=() # every input that gets the per-input flag sets, by path

corpus=$REPO/../shared/corpus
if [[ -d $corpus ]]; then
    corpus=$(cd "$corpus" && pwd)
    while IFS= read -r -d '' f; do
        rel=${f#"$corpus"/}
        mkdir -p "$IN/corpus/$(dirname "$rel")"
        cp "$f" "$IN/corpus/$rel"
        chmod u+w "$IN/corpus/$rel"
        INPUTS+=("$IN/corpus/$rel")
    done < <(find "$corpus" -type f -print0 | sort -z)
else
    say "no ../shared/corpus: running without the corpus"
fi
for f in "$REPO"/samples/*; do
    [[ -f $f && $f != */README.md ]] || continue
    cp "$f" "$IN/samples/"
    INPUTS+=("$IN/samples/${f##*/}")
done

# The base revision's generators (deterministic), when it has them.
G=$T/bin/base
gen() { # NAME EXAMPLE ARGS...
    local name=$1 ex=$2
    shift 2
    [[ -x $G/$ex ]] || return 0
    "$G/$ex" "$@" -o "$IN/gen/$name" 2>/dev/null
    INPUTS+=("$IN/gen/$name")
}
gen sloppy-3mb.log make_sloppy --mb 3
gen padded-3mb.log make_padded --mb 3
gen gem5-3mb.out make_gem5 --mb 3
gen gem5-ex-logs-1mb.out make_gem5 --mb 1 --ex-logs
gen rsd-3mb.raw.log make_rsd --mb 3
gen rsd-seed3-nofunc.raw.log make_rsd --cycles 1500 --seed 3 --nofunc
gen rsd-seed2-wrap.raw.log make_rsd --cycles 4000 --seed 2
if [[ -f $IN/gen/sloppy-3mb.log ]]; then
    gzip -n -c "$IN/gen/sloppy-3mb.log" >"$IN/gen/sloppy-3mb.log.gz"
    INPUTS+=("$IN/gen/sloppy-3mb.log.gz")
fi
if [[ -f $IN/gen/gem5-3mb.out ]] && command -v zstd >/dev/null; then
    zstd -q -c "$IN/gen/gem5-3mb.out" >"$IN/gen/gem5-3mb.out.zst"
    INPUTS+=("$IN/gen/gem5-3mb.out.zst")
fi

# Made inputs: damaged files and dialects, as the tests build them (kanata-pp/tests/cli.rs,
# batch.rs, tests/tests/pp_damaged_input.rs, the gem5 reader's dialect tests).
M=$IN/made
made() { INPUTS+=("$M/$1"); }
pick() { # the first of the given paths that exists
    local p
    for p; do [[ -f $p ]] && { printf '%s\n' "$p"; return; }; done
    printf '%s\n' "$IN/samples/sloppy.log"
}
SLOPPY=$IN/samples/sloppy.log
PIPELINED=$(pick "$IN/corpus/kanata/anacambag__6192_Final_Project__pipelined.log")
USCOPE=$(pick "$IN/corpus/gem5/ProteusLab__uScope__reference.out" "$IN/gen/gem5-ex-logs-1mb.out")
RSD1=$(pick "$IN/corpus/rsd/gen-seed1.raw.log" "$IN/gen/rsd-seed3-nofunc.raw.log" "$IN/samples/rsd_raw.log")
BIG=$(pick "$IN/gen/sloppy-3mb.log")

# perl helpers: a fixed LCG, so that the damage is the same on every run.
NOISE='my ($n, $mode) = (shift, shift); local $/; my $s = <>; my $x = 12345;
  my @b = map { chr } (9, 10, 13, 32, 58, 47, 45, 43, 48, 57, 67, 73, 69, 70, 76, 82, 83, 87,
                       61, 35, 120, 0, 255, 195);
  for (1 .. $n) { $x = ($x * 1103515245 + 12345) & 0x7fffffff; my $p = $x % (length($s) + 1);
    $x = ($x * 1103515245 + 12345) & 0x7fffffff; my $c = $b[$x % @b];
    if ($mode eq "insert") { substr($s, $p, 0) = $c } elsif ($p < length $s) { substr($s, $p, 1) = $c } }
  print $s;'

head -c 1000 "$SLOPPY" >"$M/sloppy-cut-1000.log" && made sloppy-cut-1000.log
head -c 20011 "$PIPELINED" >"$M/pipelined-cut.log" && made pipelined-cut.log
head -c 30007 "$USCOPE" >"$M/gem5-cut.out" && made gem5-cut.out
head -c 100003 "$RSD1" >"$M/rsd-cut.raw.log" && made rsd-cut.raw.log
gzip -n -c "$BIG" >"$T/big.gz"
gz_size=$(wc -c <"$T/big.gz")
head -c 100 "$T/big.gz" >"$M/cut-early.log.gz" && made cut-early.log.gz
head -c $((gz_size / 2)) "$T/big.gz" >"$M/cut-half.log.gz" && made cut-half.log.gz
head -c $((gz_size - 4)) "$T/big.gz" >"$M/cut-tail.log.gz" && made cut-tail.log.gz
# zstd by the base binary itself (the canonical form of BIG, compressed), then cut.
"$BASE_BIN" -q "$BIG" -o "$T/big.kanata.zst"
zst_size=$(wc -c <"$T/big.kanata.zst")
cp "$T/big.kanata.zst" "$M/canonical.kanata.zst" && made canonical.kanata.zst
head -c $((zst_size / 2)) "$T/big.kanata.zst" >"$M/cut-half.kanata.zst" && made cut-half.kanata.zst
head -c $((zst_size - 4)) "$T/big.kanata.zst" >"$M/cut-tail.kanata.zst" && made cut-tail.kanata.zst
perl -e 'print join "", map { chr((($_ * 2654435761) % 2**32) >> 13 & 255) } 0 .. 4095' |
    perl -pe 'BEGIN { $/ = \4096 } substr($_, 100, 1) = "\0"' >"$M/garbage.bin" && made garbage.bin
perl -e "$NOISE" 40 insert "$PIPELINED" >"$M/pipelined-noise.log" && made pipelined-noise.log
perl -e "$NOISE" 40 set "$SLOPPY" >"$M/sloppy-set-bytes.log" && made sloppy-set-bytes.log
perl -e "$NOISE" 40 insert "$USCOPE" >"$M/gem5-noise.out" && made gem5-noise.out
perl -e "$NOISE" 40 set "$RSD1" >"$M/rsd-set-bytes.raw.log" && made rsd-set-bytes.raw.log
# Invalid UTF-8 in label text (Kanata `L` lines), in gem5 disassembly and in RSD comments.
perl -pe 's/^(L\t.*?)$/$1\xff\xfe(\xc3/ if $. % 3 == 0' "$SLOPPY" >"$M/sloppy-non-utf8.log" &&
    made sloppy-non-utf8.log
perl -pe 's/^(O3PipeView:fetch:.*)$/$1 \xc3\x28\xff/ if $. % 5 == 1' "$USCOPE" >"$M/gem5-non-utf8.out" &&
    made gem5-non-utf8.out
perl -pe 's/^(#.*)$/$1\xff/ if $. % 7 == 0' "$RSD1" >"$M/rsd-non-utf8.raw.log" && made rsd-non-utf8.raw.log
: >"$M/empty.log" && made empty.log
printf '\n\n# only a comment\n' >"$M/blank.log" && made blank.log
printf 'cycle,pc,stage\n0,0x1000,F\n1,0x1000,D\n' >"$M/notes.csv" && made notes.csv
printf 'hello\nKanata\t0004\n' >"$M/late-header.log" && made late-header.log
printf 'Kanata\t0004\nC=\t10\nI\t0\t0\t0\nC\t1\nC\t-1\nR\t0\t0\t0\n' >"$M/backwards.log" && made backwards.log
printf 'Kanata\t0004\nC=\t0\nI\t0\t0\t0\nC\t9223372036854775807\nC\t1\nR\t0\t0\t0\n' >"$M/cycle-overflow.log" &&
    made cycle-overflow.log
perl -pe 's/\n/\r\n/' "$SLOPPY" >"$M/sloppy-crlf.log" && made sloppy-crlf.log
{ head -n 40 "$SLOPPY" | gzip -n -c; tail -n +41 "$SLOPPY" | gzip -n -c; } >"$M/two-members.log.gz" &&
    made two-members.log.gz
gzip -n -c "$SLOPPY" >"$M/disguised.log.zst" && made disguised.log.zst
# gem5 dialects (docs/gem5.md "Dialects").
cat >"$M/boom-events.out" <<'EOF'
1; O3PipeView:fetch:1000:0x80000000:0:1:addi a0, a0, 1
2; O3PipeView:fetch:1000:0x80000004:0:2:sw a0, 0(sp)
3; O3PipeView:fetch:1000:0x80000008:0:3:bne a0, a1, 8
4; O3PipeView:fetch:1000:0x8000000c:0:4:add a2, a2, a2
1; O3PipeView:decode:2000
1; O3PipeView:rename: 0
1; O3PipeView:dispatch: 0
2; O3PipeView:decode:2000
2; O3PipeView:rename: 0
2; O3PipeView:dispatch: 0
3; O3PipeView:decode:3000
3; O3PipeView:rename: 0
3; O3PipeView:dispatch: 0
1; O3PipeView:dispatch: 3000
2; O3PipeView:dispatch: 3000
1; O3PipeView:issue: 4000
2; O3PipeView:issue: 4000
3; O3PipeView:dispatch: 4000
1; O3PipeView:complete:5000
2; O3PipeView:issue: 5000
2; O3PipeView:complete:6000
1; O3PipeView:retire:6000:store: 0
3; O3PipeView:issue: 6000
2; O3PipeView:retire:7000:store: 0
3; O3PipeView:complete:7000
5; O3PipeView:fetch:8000:0x80000010:0:5:ret
3; O3PipeView:retire:8000:store: 0
2; store-comp: 9000
5; O3PipeView:decode:9000
5; O3PipeView:complete:10000
5; O3PipeView:retire:11000:store: 0
6; O3PipeView:fetch:11000:0x80000014:0:6:nop
7; O3PipeView:decode:9000
1; store-comp: 9500
EOF
made boom-events.out
sed 's/^/[core0 @ 12] /' "$USCOPE" >"$M/gem5-rtl-prefix.out" && made gem5-rtl-prefix.out
perl -pe 's/^(O3PipeView:fetch):(\d+):(0x[0-9a-f]+):(\d+):(\d+):/$1: $2: $3: $4: $5:/ or
          s/^(O3PipeView:\w+):/$1: /; s/:store:/: store: /' "$USCOPE" >"$M/gem5-spaced.out" && made gem5-spaced.out
sed 's/^\(O3PipeView:retire:[0-9]*\):store:.*/\1/' "$USCOPE" >"$M/gem5-old-retire.out" && made gem5-old-retire.out
# A Kanata log mixed into other output, for --strip-prefix (Q18).
sed -e 's/^/sim> /' -e '3~4a info: cycle done' "$IN/samples/pipeline_sim.kanata" >"$M/prefixed.log" &&
    made prefixed.log
# File names the JSON report must escape.
WEIRD=$M/$'we"ird\\name\tx.log'
NONUTF8_NAME=$M/$'bad\xff\xfename.log'
cp "$SLOPPY" "$WEIRD" && INPUTS+=("$WEIRD")
cp "$SLOPPY" "$NONUTF8_NAME" && INPUTS+=("$NONUTF8_NAME")

# ---------------------------------------------------------------------------------------
# Cases: $T/cases/NNNN/{desc,args[,stdin][,put]}.
# ---------------------------------------------------------------------------------------
NCASES=0
# add_case [--stdin FILE] [--put SRC NAME]... -- ARGS...: a run in an empty folder (the
# files given with --put copied there first), with stdin from FILE or /dev/null.
add_case() {
    local stdin= puts=()
    while [[ $1 != -- ]]; do
        case $1 in
            --stdin) stdin=$2; shift 2 ;;
            --put) puts+=("$2" "$3"); shift 3 ;;
        esac
    done
    shift
    NCASES=$((NCASES + 1))
    local d
    printf -v d '%s/cases/%04d' "$T" "$NCASES"
    mkdir -p "$d"
    local a desc=
    : >"$d/args"
    for a; do
        printf '%s\n' "$a" >>"$d/args"
        desc+=" ${a#"$IN"/}"
    done
    [[ -n $stdin ]] && { printf '%s\n' "$stdin" >"$d/stdin"; desc+=" < ${stdin#"$IN"/}"; }
    local i
    for ((i = 0; i < ${#puts[@]}; i += 2)); do
        printf '%s\t%s\n' "${puts[i]}" "${puts[i + 1]}" >>"$d/put"
        desc="[${puts[i + 1]}=${puts[i]#"$IN"/}]$desc"
    done
    printf '%s\n' "${desc# }" >"$d/desc"
}

# The flag sets every input is run with (docs/in-ci.md, docs/cleanups.md, kanata-pp --help).
for f in "${INPUTS[@]}"; do
    add_case -- "$f" -o out.kanata
    add_case -- "$f" -o out.kanata.gz
    add_case -- "$f" -o out.kanata.zst
    add_case -- "$f" --check
    add_case -- "$f" --check --report json
    add_case -- "$f" --stats
    add_case -- "$f" --stats --report json -o out.kanata
    add_case -- "$f" -v -o out.kanata
    add_case -- "$f" -q --level 1 -o out.kanata.gz
    add_case -- "$f" --strict -o out.kanata
    add_case -- "$f" --renumber-retire --close-open flush --dedupe --stretch-zero --compact -o out.kanata
    add_case -- "$f" --renumber-retire --close-open retire --late-window 0 -v --level 9 -o out.kanata.zst
    add_case -- "$f" --from kanata -o out.kanata
    add_case -- "$f" --from gem5 -o out.kanata
    add_case -- "$f" --from rsd -o out.kanata
    add_case -- "$f" --deps --window 64 --ticks-per-cycle 500 -v -o out.kanata
    add_case -- "$f" --from gem5 --deps --stats --report json
    add_case -- "$f" --rsd-disasm 2021 --report json -o out.kanata
    add_case --stdin "$f" -- - -o -
    add_case --stdin "$f" -- - --check --report json
done
N_PER_INPUT=$NCASES

# Q18 on a log mixed into other output.
add_case -- "$M/prefixed.log" --strip-prefix 'sim> ' -o out.kanata
add_case -- "$M/prefixed.log" --strip-prefix 'sim> ' --from kanata -v --report json -o out.kanata.zst
# The default output beside the input, and an existing output (replaced, or left untouched
# when the run fails).
add_case --put "$SLOPPY" run.log -- run.log
add_case --put "$T/big.gz" sub/run.log.gz -- sub/run.log.gz --compress zstd
add_case --put "$SLOPPY" run.log --put "$M/notes.csv" out.kanata -- run.log -o out.kanata
add_case --put "$M/backwards.log" back.log --put "$M/notes.csv" out.kanata -- back.log -o out.kanata
add_case --put "$M/cut-half.log.gz" run.log.gz --put "$M/notes.csv" out.kanata -- run.log.gz -o out.kanata
add_case --put "$SLOPPY" run.log -- run.log -o /dev/null
# I/O errors (exit 1).
add_case -- "$T/no-such.log" -o out.kanata
add_case -- "$IN/samples" -o out.kanata
add_case --put "$SLOPPY" run.log -- run.log -o no-such-dir/out.kanata
add_case --put "$SLOPPY" run.log --put "$M/empty.log" sub/keep -- run.log -o sub
# Usage errors (exit 2): nothing is read or written.
add_case --
add_case -- "$SLOPPY" --no-such-flag
add_case -- "$SLOPPY" -q -v
add_case -- "$SLOPPY" --compress bzip2
add_case -- "$SLOPPY" --from vcd
add_case -- "$SLOPPY" --compress zstd -o out.kanata.gz
add_case -- "$SLOPPY" --compress gzip -o out.kanata.zst
add_case -- "$SLOPPY" --compress none -o out.kanata.gz
add_case -- "$SLOPPY" --compress gzip -o out.bin
add_case -- "$SLOPPY" -o out.kanata.gz --level 10
add_case -- "$SLOPPY" -o out.kanata.zst --level 99
add_case -- "$SLOPPY" -o a.kanata -o b.kanata
add_case -- "$SLOPPY" --report json -o -
add_case -- "$SLOPPY" --close-open sideways
add_case -- "$SLOPPY" --window x
add_case --put "$IN/samples/sloppy.kanata" c.kanata -- c.kanata
add_case --put "$SLOPPY" a.log --put "$SLOPPY" b.log -- a.log b.log -o out.kanata
add_case --put "$SLOPPY" a.log --put "$SLOPPY" b.log -- --check a.log b.log -o out.kanata
add_case --put "$SLOPPY" a.log --put "$SLOPPY" b.log -- a.log b.log
add_case --put "$SLOPPY" a.log --put "$SLOPPY" b.log -- --report json a.log b.log
add_case --put "$SLOPPY" a.log --stdin "$SLOPPY" -- -d out a.log -
add_case --put "$SLOPPY" a.log --stdin "$SLOPPY" -- --check a.log -
add_case --put "$SLOPPY" a/run.log --put "$T/big.gz" b/run.log.gz -- -d out a/run.log b/run.log.gz
add_case --put "$SLOPPY" a.log --put "$IN/samples/sloppy.kanata" c.kanata -- -d . a.log c.kanata
add_case --put "$SLOPPY" a.log --put "$IN/samples/sloppy.kanata" c.kanata -- -d copies/.. a.log c.kanata
add_case --put "$SLOPPY" a.log -- -d out -j 0 a.log
add_case --put "$SLOPPY" a.log -- -d out --level 30 --compress zstd a.log
# The program's own texts.
add_case -- --help
add_case -- -h
add_case -- --version
add_case -- --generate-completions bash
add_case -- --generate-completions zsh
add_case -- --generate-completions fish
add_case -- --generate-man
add_case -- --generate-man --check

# Batch runs over a folder of several inputs, good and bad (kanata-pp/tests/batch.rs).
for f in "$SLOPPY" "$IN/samples/pipeline_sim.kanata" "$USCOPE" "$RSD1" "$M/garbage.bin" \
    "$M/cut-half.log.gz" "$M/empty.log" "$M/backwards.log" "$M/disguised.log.zst" \
    "$M/two-members.log.gz" "$M/canonical.kanata.zst" "$M/notes.csv" "$WEIRD" \
    "$(pick "$IN/gen/gem5-3mb.out")" "$(pick "$IN/gen/rsd-3mb.raw.log")"; do
    cp "$f" "$IN/batch/"
done
BATCH=()
while IFS= read -r -d '' f; do BATCH+=("$f"); done < <(find "$IN/batch" -type f -print0 | sort -z)
add_case -- -d out -j 2 --report json "${BATCH[@]}"
add_case -- -d out -j 2 --compress zstd "${BATCH[@]}"
add_case -- -d out -j 1 -v --compress gzip --dedupe --close-open retire "${BATCH[@]}"
add_case -- -d out -j 2 -q "${BATCH[@]}" "$T/no-such.log" "$IN/samples"
add_case -- --check --report json -j 2 "${BATCH[@]}"
add_case -- --check --strict -j 2 "${BATCH[@]}"
add_case -- --stats --report json -j 2 "${BATCH[@]}"
add_case -- --stats -j 2 -d out "${BATCH[@]}"
say "$NCASES cases: ${#INPUTS[@]} inputs x $((N_PER_INPUT / ${#INPUTS[@]})) flag sets, then $((NCASES - N_PER_INPUT)) others"

# ---------------------------------------------------------------------------------------
# Running and comparing, $JOBS cases at a time. Each case runs in $T/run/{base,cur}/NNNN/files
# (an empty folder, the same relative paths on both sides); stdout, stderr and the exit code
# go beside it. Verdicts go to $T/res/NNNN: one line per difference, empty when identical.
# ---------------------------------------------------------------------------------------
run_side() { # ID SIDE BIN
    local c=$T/cases/$1 r=$T/run/$2/$1 src name args=() in=/dev/null rc=0
    mkdir -p "$r/files"
    if [[ -f $c/put ]]; then
        while IFS=$'\t' read -r src name; do
            mkdir -p "$r/files/$(dirname "$name")"
            cp "$src" "$r/files/$name"
        done <"$c/put"
    fi
    mapfile -t args <"$c/args"
    [[ -f $c/stdin ]] && in=$(<"$c/stdin")
    (cd "$r/files" && exec timeout "${CASE_TIMEOUT:-120}" "$3" "${args[@]}") \
        <"$in" >"$r/stdout" 2>"$r/stderr" || rc=$?
    echo "$rc" >"$r/rc"
}

# compare_case ID...: writes each case's verdict to $T/res/ID, one line per difference (empty
# when the two sides are identical). One perl process for several cases: the comparison of
# ~1500 cases costs seconds, not a minute of forks.
#
# What is masked before stdout and stderr are compared (only when the raw bytes differ, and
# only these): the case's own run folder, which differs between the two sides, as <CWD> (an
# error naming the output by its absolute path); the random name of kanata-pp's temporary
# output file, `.kanata-pp-XXXXXX.tmp`, as `.kanata-pp-<RANDOM>.tmp` (an error about it); the
# inputs folder as <IN> (the same on both sides, masked only so that kept outputs read the
# same from run to run); the wall times, which vary from run to run: `"seconds":N` in the
# JSON report's objects and the `, N.NN s` that ends the -v summary line. Output files,
# exit codes and the names, types and modes of the files left are compared unmasked.
COMPARE='
use strict; use warnings;
my $T = $ENV{T};
sub slurp { my ($p) = @_; open my $f, "<:raw", $p or return undef; local $/; my $s = <$f>; $s // "" }
sub mask {
    my ($s, $cwd) = @_;
    $s =~ s/\Q$cwd\E/<CWD>/g;
    $s =~ s/\Q$T\/in\E/<IN>/g;
    $s =~ s/\.kanata-pp-[A-Za-z0-9]+\.tmp/.kanata-pp-<RANDOM>.tmp/g;
    $s =~ s{^(\{"type":"(?:file|summary)",.*)$}{ my $l = $1; $l =~ s/"seconds":[0-9.]+/"seconds":<SECONDS>/g; $l }gme;
    $s =~ s/(, [0-9]+ bytes out, )[0-9]+\.[0-9]{2} s$/$1<SECONDS> s/gm;
    $s;
}
sub first_difference {
    my ($x, $y) = @_;
    my $n = length($x) < length($y) ? length($x) : length($y);
    my $i = (substr($x, 0, $n) ^ substr($y, 0, $n)) =~ /[^\0]/ ? $-[0] : $n;
    return length($x) < length($y) ? "base is shorter, the current side goes on" : "current is shorter, base goes on" if $i == $n;
    my $line = 1 + (substr($x, 0, $i) =~ tr/\n//);
    "first at byte " . ($i + 1) . ", line $line";
}
sub listing { # path relative to ROOT => "type mode"
    my ($root) = @_; my %l; my @todo = ("");
    while (@todo) {
        my $dir = shift @todo;
        opendir my $d, "$root/$dir" or next;
        my @entries = grep { $_ ne "." && $_ ne ".." } readdir $d;
        for my $e (sort @entries) {
            my $rel = $dir eq "" ? $e : "$dir/$e";
            my @st = lstat "$root/$rel";
            my $type = -l _ ? "l" : -d _ ? "d" : -f _ ? "f" : "?";
            $l{$rel} = sprintf "%s %o", $type, $st[2] & 07777;
            push @todo, $rel if $type eq "d";
        }
    }
    \%l;
}
for my $id (@ARGV) {
    my ($b, $c) = ("$T/run/base/$id", "$T/run/cur/$id");
    my @out;
    my ($rb, $rc) = map { my $r = slurp("$_/rc") // "none"; chomp $r; $r } $b, $c;
    push @out, "exit code $rb (base) vs $rc (current)" if $rb ne $rc;
    for my $s (qw(stdout stderr)) {
        my ($x, $y) = (slurp("$b/$s") // "", slurp("$c/$s") // "");
        next if $x eq $y;
        ($x, $y) = (mask($x, "$b/files"), mask($y, "$c/files"));
        push @out, "$s differs (" . first_difference($x, $y) . ")" if $x ne $y;
    }
    my ($lb, $lc) = (listing("$b/files"), listing("$c/files"));
    for my $f (sort keys %$lb) {
        if (!exists $lc->{$f}) { push @out, "only in base: $f ($lb->{$f})"; next }
        if ($lb->{$f} ne $lc->{$f}) { push @out, "$f is $lb->{$f} in base, $lc->{$f} in current"; next }
        if ($lb->{$f} =~ /^f/) {
            my ($x, $y) = (slurp("$b/files/$f"), slurp("$c/files/$f"));
            push @out, "output file $f differs (" . first_difference($x, $y) . ")" if $x ne $y;
        } elsif ($lb->{$f} =~ /^l/) {
            my ($x, $y) = (readlink("$b/files/$f"), readlink("$c/files/$f"));
            push @out, "link $f differs" if $x ne $y;
        }
    }
    for my $f (sort keys %$lc) { push @out, "only in current: $f ($lc->{$f})" unless exists $lb->{$f} }
    my $desc = slurp("$T/cases/$id/desc") // "?\n"; chomp $desc;
    open my $r, ">:raw", "$T/res/$id.part" or die "$T/res/$id.part: $!";
    print $r "DIFF $id [$desc]: $_\n" for @out;
    close $r or die;
    rename "$T/res/$id.part", "$T/res/$id" or die;
}
'
compare_case() { perl -e "$COMPARE" "$@"; }
run_cases() {
    local id
    for id; do
        run_side "$id" base "$BASE_BIN"
        run_side "$id" cur "$CUR_BIN"
    done
    compare_case "$@"
}
export T BASE_BIN CUR_BIN COMPARE
export -f run_side compare_case run_cases

mkdir -p "$T/res"
RUN_STARTED=$SECONDS
say "running $NCASES cases, base vs $CUR_WHAT, $JOBS at a time"
# A case whose run or comparison broke leaves no verdict, and is reported below.
(cd "$T/cases" && ls) |
    xargs -P "$JOBS" -n 8 bash -c 'set -uo pipefail; run_cases "$@"' _ || true
say "runs done in $((SECONDS - RUN_STARTED)) s"

# ---------------------------------------------------------------------------------------
# --self-test: plant differences in the current side and compare those cases again.
# ---------------------------------------------------------------------------------------
PLANTED=()
PLANTED_KIND=()
flip() { # FILE: the middle byte XOR 1
    perl -e 'open my $f, "+<", $ARGV[0] or die; my $p = int((-s $f) / 2); seek $f, $p, 0;
             read $f, my $c, 1; seek $f, $p, 0; print $f chr(ord($c) ^ 1); close $f' "$1"
}
plant() { # KIND: picks the first case not planted yet that has what KIND needs
    local kind=$1 d id
    for d in "$T"/run/cur/*; do
        id=${d##*/}
        [[ " ${PLANTED[*]} " == *" $id "* || -s $T/res/$id ]] && continue
        case $kind in
            file)
                [[ -s $d/files/out.kanata ]] || continue
                flip "$d/files/out.kanata" ;;
            stderr) # not -v (its summary line ends in a masked time), no masked temp name
                [[ -s $d/stderr ]] && ! grep -qx -- '-v' "$T/cases/$id/args" &&
                    ! grep -q 'kanata-pp-' "$d/stderr" || continue
                flip "$d/stderr" ;;
            stdout) # a trace on stdout (`- -o -`), where nothing is masked
                [[ -s $d/stdout && -f $T/cases/$id/stdin ]] && ! grep -q json "$T/cases/$id/args" ||
                    continue
                flip "$d/stdout" ;;
            rc)
                echo 7 >"$d/rc" ;;
        esac
        PLANTED+=("$id")
        PLANTED_KIND+=("$kind")
        compare_case "$id"
        say "self-test: planted a difference ($kind) in case $id"
        return
    done
    say "self-test: no case to plant a $kind difference in"
    exit 1
}
if ((SELF_TEST)); then
    for kind in file stderr stdout rc; do plant "$kind"; done
fi

# ---------------------------------------------------------------------------------------
# The verdict.
# ---------------------------------------------------------------------------------------
DIFFERING=()
for d in "$T"/cases/*; do
    id=${d##*/}
    if [[ ! -f $T/res/$id ]]; then
        echo "DIFF $id [$(<"$d/desc")]: not compared (the run did not finish)"
        DIFFERING+=("$id")
    elif [[ -s $T/res/$id ]]; then
        cat "$T/res/$id"
        DIFFERING+=("$id")
    fi
done
ELAPSED=$((SECONDS - STARTED))
if ((${#DIFFERING[@]} == 0)); then
    echo "$NCASES cases, all identical (base $BASE_REV vs $CUR_WHAT, ${ELAPSED} s)"
else
    echo "${#DIFFERING[@]} of $NCASES differ (base $BASE_REV vs $CUR_WHAT, ${ELAPSED} s)"
fi

if ((SELF_TEST)); then
    # Each planted difference must be reported, as what it is; any other case that differs
    # is a real difference.
    missed=0
    for i in "${!PLANTED[@]}"; do
        case ${PLANTED_KIND[i]} in
            file) want=': output file out.kanata differs' ;;
            stderr) want=': stderr differs' ;;
            stdout) want=': stdout differs' ;;
            rc) want=': exit code ' ;;
        esac
        grep -qF -- "$want" "$T/res/${PLANTED[i]}" || {
            echo "self-test: FAILED: the ${PLANTED_KIND[i]} difference planted in case ${PLANTED[i]} was not reported"
            missed=1
        }
    done
    real=()
    for id in "${DIFFERING[@]}"; do
        [[ " ${PLANTED[*]} " == *" $id "* ]] || real+=("$id")
    done
    if ((missed)); then
        FOUND_DIFF=1
        exit 1
    fi
    echo "self-test: OK, the ${#PLANTED[@]} planted differences (${PLANTED_KIND[*]} in cases ${PLANTED[*]}) were all reported"
    if ((${#real[@]})); then
        echo "self-test: but ${#real[@]} other cases differ for real"
        FOUND_DIFF=1
        exit 1
    fi
    exit 0
fi
if ((${#DIFFERING[@]})); then
    FOUND_DIFF=1
    exit 1
fi
