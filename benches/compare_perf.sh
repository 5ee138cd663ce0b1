#!/usr/bin/env bash
# Compares hwprof with perf on the same machine, one subcommand at a time.
#
#   benches/compare_perf.sh stat      startup cost and overhead on a CPU-bound workload
#
# Environment:
#   HWPROF=path    hwprof binary to use (default: target/release/hwprof, built if needed)
#   PERF=path      perf binary (default: perf on PATH)
#   N_START=200    runs per tool of `stat -e task-clock -- true`
#   N_WORK=20      runs per variant of the CPU-bound workload
#   SPIN_ITERS=N   iterations of the busy loop (default 150000000, ~0.2 s)
#
# Runs are interleaved (A B A B ...) so that drift (frequency, cache, other load) hits
# every variant alike. Times are wall clock, from bash's $EPOCHREALTIME (no fork per
# reading); `date +%s%N` where bash is older than 5.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() {
    echo "compare_perf: $*" >&2
    exit 1
}

usage() {
    echo "usage: $0 stat" >&2
    echo "  (record, report... are not benchmarked yet)" >&2
    exit 2
}

# --- tools --------------------------------------------------------------------------

find_perf() {
    PERF=${PERF:-$(command -v perf || true)}
    [[ -n $PERF && -x $PERF ]] || die "perf not found: install linux-perf (apt-get install linux-perf)"
    # Debian's /usr/bin/perf is a wrapper that fails when no perf matches the kernel.
    "$PERF" --version >/dev/null 2>&1 || die "$PERF does not run: install linux-perf for this kernel ($(uname -r))"
}

find_hwprof() {
    if [[ -n ${HWPROF:-} ]]; then
        [[ -x $HWPROF ]] || die "HWPROF=$HWPROF is not executable"
        return
    fi
    echo "building hwprof (cargo build --release)..." >&2
    (cd "$ROOT" && cargo build --release --quiet --bin hwprof) || die "cargo build --release failed"
    HWPROF=$ROOT/target/release/hwprof
    [[ -x $HWPROF ]] || die "no $HWPROF after the build"
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/compare_perf.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# A busy loop of a fixed number of iterations (fixed work, not fixed time).
# tests/workloads/spin.c spins for a fixed amount of CPU *time*, which would hide part of
# the overhead being measured, so the script builds its own fixed-iteration loop.
build_spin() {
    local src=$WORK/spin_iters.c
    cat >"$src" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 150000000UL;
    unsigned long x = 1;
    for (unsigned long i = 0; i < n; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL; /* dependent chain */
    printf("%lu\n", x);
    return 0;
}
EOF
    local cc
    cc=$(command -v cc || command -v gcc || command -v clang || true)
    if [[ -n $cc ]]; then
        "$cc" -O2 -o "$WORK/spin" "$src" || die "cannot compile $src"
        SPIN=("$WORK/spin" "${SPIN_ITERS:-150000000}")
        SPIN_DESC="C busy loop, ${SPIN_ITERS:-150000000} iterations"
    else
        command -v python3 >/dev/null || die "need a C compiler or python3 for the workload"
        SPIN=(python3 -c 'x=1
for i in range(3000000): x=(x*6364136223846793005+1442695040888963407)&0xffffffffffffffff')
        SPIN_DESC="python3 loop, 3000000 iterations (no C compiler)"
    fi
}

# --- timing -------------------------------------------------------------------------

# now_us VAR: microseconds since the epoch into VAR, without forking where bash can.
now_us() {
    if [[ -n ${EPOCHREALTIME:-} ]]; then
        local t=${EPOCHREALTIME//[.,]/}
        printf -v "$1" '%s' "$((10#$t))"
    else
        local t
        t=$(date +%s%N)
        printf -v "$1" '%s' "$((t / 1000))"
    fi
}

# interleave N NAME... : runs the commands in arrays CMD_<NAME> N times each, in turn,
# and appends each run's microseconds to $WORK/NAME.times. A failing run aborts.
interleave() {
    local n=$1
    shift
    local name i t0 t1
    for name in "$@"; do : >"$WORK/$name.times"; done
    for ((i = 0; i < n; i++)); do
        for name in "$@"; do
            local -n cmd="CMD_$name"
            now_us t0
            "${cmd[@]}" >/dev/null 2>&1 || die "run $i of $name failed: ${cmd[*]}"
            now_us t1
            echo $((t1 - t0)) >>"$WORK/$name.times"
            unset -n cmd
        done
    done
}

# mean_ms NAME: mean of NAME's runs in milliseconds.
mean_ms() {
    awk '{ s += $1; n++ } END { if (n) printf "%.3f", s / n / 1000; else print "nan" }' "$WORK/$1.times"
}

# median_ms NAME.
median_ms() {
    sort -n "$WORK/$1.times" | awk '{ v[n++] = $1 } END { if (!n) { print "nan"; exit } m = (n % 2) ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2; printf "%.3f", m / 1000 }'
}

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "nan" }'
}

# --- subcommands --------------------------------------------------------------------

bench_stat() {
    find_perf
    find_hwprof
    build_spin
    local n_start=${N_START:-200} n_work=${N_WORK:-20}

    # Sanity: both tools must count the workload before anything is timed.
    "$HWPROF" stat -e task-clock -- true >/dev/null 2>&1 || die "'$HWPROF stat -e task-clock -- true' fails: $("$HWPROF" stat -e task-clock -- true 2>&1 | tail -1)"
    "$PERF" stat -e task-clock -- true >/dev/null 2>&1 || die "'$PERF stat -e task-clock -- true' fails: $("$PERF" stat -e task-clock -- true 2>&1 | tail -1)"

    echo "hwprof: $HWPROF"
    echo "perf:   $PERF ($("$PERF" --version))"
    echo "cpus:   $(nproc), kernel $(uname -r)"
    echo

    # (a) startup: the whole cost of counting a process that does nothing.
    CMD_hw_start=("$HWPROF" stat -e task-clock -- true)
    CMD_perf_start=("$PERF" stat -e task-clock -- true)
    interleave "$n_start" hw_start perf_start
    local hw pf
    hw=$(mean_ms hw_start)
    pf=$(mean_ms perf_start)
    echo "== stat startup: stat -e task-clock -- true, $n_start runs each, interleaved"
    printf '%-10s %10s %10s\n' tool "mean ms" "median ms"
    printf '%-10s %10s %10s\n' hwprof "$hw" "$(median_ms hw_start)"
    printf '%-10s %10s %10s\n' perf "$pf" "$(median_ms perf_start)"
    echo "stat startup: hwprof $hw ms, perf $pf ms, ratio $(ratio "$hw" "$pf")"
    echo

    # (b) overhead on a CPU-bound workload of fixed work.
    CMD_bare=("${SPIN[@]}")
    CMD_hw_work=("$HWPROF" stat -e task-clock -- "${SPIN[@]}")
    CMD_perf_work=("$PERF" stat -e task-clock -- "${SPIN[@]}")
    interleave "$n_work" bare hw_work perf_work
    local bare hww pfw
    bare=$(mean_ms bare)
    hww=$(mean_ms hw_work)
    pfw=$(mean_ms perf_work)
    echo "== stat overhead: $SPIN_DESC, $n_work runs each, interleaved"
    printf '%-10s %10s %10s %10s\n' variant "mean ms" "median ms" "vs bare"
    printf '%-10s %10s %10s %10s\n' bare "$bare" "$(median_ms bare)" "1.00"
    printf '%-10s %10s %10s %10s\n' hwprof "$hww" "$(median_ms hw_work)" "$(ratio "$hww" "$bare")"
    printf '%-10s %10s %10s %10s\n' perf "$pfw" "$(median_ms perf_work)" "$(ratio "$pfw" "$bare")"
    echo "stat workload: bare $bare ms, hwprof $hww ms ($(ratio "$hww" "$bare")x bare), perf $pfw ms ($(ratio "$pfw" "$bare")x bare), ratio hwprof/perf $(ratio "$hww" "$pfw")"
}

[[ $# -ge 1 ]] || usage
case "$1" in
    stat) bench_stat ;;
    record | report | flamegraph)
        die "'$1' is not benchmarked yet"
        ;;
    -h | --help) usage ;;
    *) usage ;;
esac
