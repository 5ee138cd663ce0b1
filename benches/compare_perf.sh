#!/usr/bin/env bash
# Compares hwprof with perf on the same machine, one subcommand at a time.
#
#   benches/compare_perf.sh stat      startup cost and overhead on a CPU-bound workload
#   benches/compare_perf.sh record    (a) overhead of `record -F 999 -g` on a CPU-bound workload
#                                     (b) the highest -F with no lost samples, 2 busy threads
#   benches/compare_perf.sh script    (c) `script -i big.data` (>= 100k samples, callchains)
#   benches/compare_perf.sh report    `report --stdio` vs perf report on a big file (>= 200k samples)
#   benches/compare_perf.sh export    `export --format pprof|speedscope|firefox` vs perf script on the
#                                     script case's big.data: wall time, peak RSS (goal <= 0.1x)
#   benches/compare_perf.sh flamegraph  SVG from a big file vs perf script | inferno (>= 200k samples)
#   benches/compare_perf.sh probe     per-call overhead of `hwprof probe` vs perf stat on perf probe events,
#                                     and the per-call cost on the target of hwprof's BPF and perf-event
#                                     engines against a bpftrace funclatency-style script (alone: probe-trace)
#   benches/compare_perf.sh offcpu    off-CPU recording overhead on a sleep/wake-heavy workload, and
#                                     the tracing cost on a pipe ping-pong: hwprof's BPF and perf-event
#                                     engines against bpftrace and perf record (alone: offcpu-trace)
#   benches/compare_perf.sh memory-trace  allocator tracing cost: 1M malloc/free pairs bare, under
#                                     hwprof memory, a bpftrace script doing the same, and heaptrack;
#                                     the tools' CPU and peak RSS, and the RSS again at 4M pairs
#   benches/compare_perf.sh io-trace  syscall tracing cost: hwprof io's BPF engine against a bpftrace
#                                     raw_syscalls script on a write/read loop
#   benches/compare_perf.sh bench     harness cost per run of `hwprof bench -r N` vs `perf stat -r N`
#   benches/compare_perf.sh memory    peak RSS of report, flamegraph and script on recordings of
#                                     2, 20 and 200 s: flat for hwprof, growing for perf
#   benches/compare_perf.sh dwarf     --call-graph dwarf: (a) flame graph from DWARF recordings (perf's,
#                                     and hwprof's with raw stacks) vs perf script | inferno; (b) record:
#                                     bytes per sample, slowdown and lost samples at the same -F and -m
#   benches/compare_perf.sh all       all of the above
#
# Environment:
#   HWPROF=path    hwprof binary to use (default: target/release/hwprof, built if needed)
#   PERF=path      perf binary (default: perf on PATH)
#   N_START=200    runs per tool of `stat -e task-clock -- true`
#   N_WORK=20      runs per variant of the CPU-bound workload
#   SPIN_ITERS=N   iterations of the busy loop (default 150000000, ~0.2 s)
#   N_REC=10       runs per tool of the record workload (REC_ITERS iterations, default 1.5e9)
#   LOSS_PAGES=8   ring size (-m) for the lost-sample search, the same for both tools
#   BIG_SECS=24    seconds of the 2-thread `perf record -F 20000 -g` that makes big.data
#                  (24 s: some 950k samples, 75-95 MB, the recording issue 24's goal names)
#   N_SCRIPT=3     runs per variant of the script comparison
#   BIG_DATA=FILE  script, export: compare on this recording instead of making big.data
#   N_EXPORT=3     runs per variant of the export comparison
#   REPORT_SECS=12 seconds of the 2-thread `perf record -F 20000 -g` behind the report bench
#   N_REPORT=3     runs per variant of the report comparison
#   N_BENCH=200    runs (-r) inside one `hwprof bench` / `perf stat -r` invocation
#   N_BENCH_REP=5  invocations per tool of the bench comparison
#   MEM_SECS="2 20 200"  recording lengths (s) of the memory comparison
#   N_PING=5 PING_ROUNDS=100000 PING_PIN=0  the tracing-cost ping-pong (PING_PIN=1: on CPU 0)
#   N_PROBE_TRACE=3 N_CALLS=600000  the probe-cost runs and the probed calls in each
#   N_MEM_TRACE=5 MEM_PAIRS=1000000  memory-trace: runs per variant, malloc/free pairs in each;
#   N_MEM_BIG=1 MEM_PAIRS_BIG=4000000  then runs per tool at MEM_PAIRS_BIG pairs (peak RSS)
#   N_DWARF=3      runs per variant of the dwarf comparisons; DWARF_F=4000, DWARF_PAGES=16
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
    echo "usage: $0 stat|record|script|export|report|flamegraph|probe|probe-trace|offcpu|offcpu-trace|memory-trace|io-trace|bench|memory|dwarf|all" >&2
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

# build_spin2: tests/workloads/spin2.c (busy threads, fixed iterations, prints its own
# wall time as "workload_us N" so the workload's time can be told from the tool's).
build_spin2() {
    cc -O2 -g -fno-omit-frame-pointer -pthread -o "$WORK/spin2" "$ROOT/tests/workloads/spin2.c" ||
        die "cannot compile tests/workloads/spin2.c"
}

# run_timed NAME CMD...: runs CMD, appends "total_us workload_us" to $WORK/NAME.times.
run_timed() {
    local file=$WORK/$1.times
    shift
    local t0 t1 out w
    now_us t0
    out=$("$@" 2>/dev/null) || die "failed: $*"
    now_us t1
    w=$(awk '/^workload_us/ { print $2 }' <<<"$out")
    echo "$((t1 - t0)) ${w:-0}" >>"$file"
}

# mean_col_ms NAME COL: mean of column COL of NAME's runs, in milliseconds.
mean_col_ms() {
    awk -v c="$2" '{ s += $c; n++ } END { if (n) printf "%.3f", s / n / 1000; else print "nan" }' "$WORK/$1.times"
}

# perf_lost FILE: lost samples in a perf.data, from `perf report -D`: the sum of
# "PERF_RECORD_LOST: id:N: lost:M" and "PERF_RECORD_LOST_SAMPLES: ...: lost samples :M".
perf_lost() {
    "$PERF" report -D -i "$1" 2>/dev/null |
        awk '/PERF_RECORD_LOST/ { if (match($0, /lost( samples)? *: *[0-9]+/)) { v = substr($0, RSTART, RLENGTH); gsub(/[^0-9]/, "", v); n += v } } END { print n + 0 }'
}

bench_record() {
    find_perf
    find_hwprof
    build_spin2
    local n=${N_REC:-10} iters=${REC_ITERS:-1500000000}
    echo "hwprof: $HWPROF"
    echo "perf:   $PERF ($("$PERF" --version))"
    echo "cpus:   $(nproc), kernel $(uname -r)"
    echo
    : >"$WORK/bare.times"
    : >"$WORK/hw.times"
    : >"$WORK/pf.times"
    local i
    for ((i = 0; i < n; i++)); do
        run_timed bare "$WORK/spin2" "$iters" 1
        run_timed hw "$HWPROF" record -q -F 999 -g -o "$WORK/hw.data" -- "$WORK/spin2" "$iters" 1
        run_timed pf "$PERF" record -q -F 999 -g -o "$WORK/pf.data" -- "$WORK/spin2" "$iters" 1
    done
    local bw hw pw bt ht pt
    bw=$(mean_col_ms bare 2)
    hw=$(mean_col_ms hw 2)
    pw=$(mean_col_ms pf 2)
    bt=$(mean_col_ms bare 1)
    ht=$(mean_col_ms hw 1)
    pt=$(mean_col_ms pf 1)
    echo "== (a) record -F 999 -g, CPU-bound workload ($iters iterations), $n runs each, interleaved"
    printf '%-8s %14s %14s\n' variant "workload ms" "total cmd ms"
    printf '%-8s %14s %14s\n' bare "$bw" "$bt" hwprof "$hw" "$ht" perf "$pw" "$pt"
    echo "record workload time: hwprof/perf $(ratio "$hw" "$pw") (hwprof $(ratio "$hw" "$bw")x bare, perf $(ratio "$pw" "$bw")x bare)"
    echo "record total command time: hwprof/perf $(ratio "$ht" "$pt")"
    echo

    # (b) raise -F until samples are lost; the same ring size for both tools.
    local pages=${LOSS_PAGES:-8} max f hw_ok=0 pf_ok=0 hw_lost pf_lost
    max=$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo 100000)
    echo "== (b) highest -F with no lost samples: 2 busy threads, -g, -m $pages, max_sample_rate $max"
    for f in 1000 2000 5000 10000 20000 50000 100000 200000; do
        ((f <= max)) || break
        hw_lost=$("$HWPROF" record -F "$f" -g -m "$pages" -o "$WORK/l.data" -- "$WORK/spin2" 400000000 2 2>&1 >/dev/null |
            sed -n 's/.* samples, \([0-9]*\) lost.*/\1/p')
        "$PERF" record -F "$f" -g -m "$pages" -o "$WORK/lp.data" -- "$WORK/spin2" 400000000 2 >/dev/null 2>&1 ||
            die "perf record -F $f failed"
        pf_lost=$(perf_lost "$WORK/lp.data")
        printf '  -F %-7s hwprof lost %-8s perf lost %s\n' "$f" "${hw_lost:-?}" "$pf_lost"
        [[ ${hw_lost:-1} == 0 ]] && hw_ok=$f
        [[ $pf_lost == 0 ]] && pf_ok=$f
    done
    echo "record lossless up to: hwprof $hw_ok Hz, perf $pf_ok Hz, ratio $(ratio "$hw_ok" "$pf_ok")"
}

bench_script() {
    find_perf
    find_hwprof
    build_spin2
    local secs=${BIG_SECS:-24} big=${BIG_DATA:-$WORK/big.data} samples
    [[ -n ${BIG_DATA:-} ]] ||
        "$PERF" record -q -F 20000 -g -o "$big" -- timeout -s INT "$secs" "$WORK/spin2" 100000000000 2 >/dev/null 2>&1 || true
    samples=$("$HWPROF" script -i "$big" --format jsonl | grep -c '"type":"sample"' || true)
    echo "== (c) script on big.data: $samples samples with callchains ($(du -h "$big" | cut -f1))"
    ((samples >= 100000)) || echo "warning: fewer than 100k samples; raise BIG_SECS"
    # hwprof script's default is perf script's text, symbolized: the same output as
    # `perf script` (docs/script.md lists the differences); -D is the record dump.
    CMD_hw_script=("$HWPROF" script -i "$big")
    CMD_hw_dump=("$HWPROF" script -D -i "$big")
    CMD_hw_jsonl=("$HWPROF" script -i "$big" --format jsonl)
    CMD_pf_script=("$PERF" script -i "$big")
    CMD_pf_raw=("$PERF" script -i "$big" -F comm,tid,time,event,ip)
    interleave "${N_SCRIPT:-3}" hw_script hw_dump hw_jsonl pf_script pf_raw
    local pf v
    pf=$(mean_ms pf_script)
    printf '%-40s %10s %10s %10s\n' command "mean ms" "/ perf" "peak KB"
    for v in "hw_script:hwprof script (perf's text)" "hw_dump:hwprof script -D" \
        "hw_jsonl:hwprof script --format jsonl" "pf_script:perf script" \
        "pf_raw:perf script -F comm,tid,time,event,ip"; do
        local -n cmd="CMD_${v%%:*}"
        printf '%-40s %10s %10s %10s\n' "${v#*:}" "$(mean_ms "${v%%:*}")" \
            "$(ratio "$(mean_ms "${v%%:*}")" "$pf")" "$(script_peak_kb "${cmd[@]}")"
        unset -n cmd
    done
    echo "symbolized script: hwprof script / perf script = $(ratio "$(mean_ms hw_script)" "$pf") (goal <= 0.10); perf script / hwprof script = $(ratio "$pf" "$(mean_ms hw_script)")x"
    echo "sample lines: hwprof $("$HWPROF" script -i "$big" | grep -vc $'^\t\\|^$' || true), perf $("$PERF" script -i "$big" 2>/dev/null | grep -vc $'^\t\\|^$' || true)"
}

# script_peak_kb CMD...: peak resident memory (KB) of one run of CMD (/usr/bin/time %M).
script_peak_kb() {
    local f=$WORK/script_peak.$$
    if [[ -x /usr/bin/time ]]; then
        /usr/bin/time -f %M -o "$f" "$@" >/dev/null 2>&1 || die "failed: $*"
        tail -1 "$f"
    else
        echo "?"
    fi
}

# bench_export: hwprof export in each format against perf script on the recording of the
# script case (the 2-thread loop, `perf record -F 20000 -g` for BIG_SECS): wall time
# (interleaved) and peak RSS of each; the goal is export <= 0.1x perf script.
bench_export() {
    find_perf
    find_hwprof
    build_spin2
    local secs=${BIG_SECS:-24} big=${BIG_DATA:-$WORK/big.data} samples n=${N_EXPORT:-3} pf f
    [[ -s $big ]] || "$PERF" record -q -F 20000 -g -o "$big" -- timeout -s INT "$secs" "$WORK/spin2" 100000000000 2 >/dev/null 2>&1 || true
    samples=$("$HWPROF" report -i "$big" --json --no-children -s comm |
        awk '/"samples":/ { gsub(/[^0-9]/, ""); print; exit }')
    echo "== export on big.data: ${samples:-?} samples with callchains ($(du -h "$big" | cut -f1))"
    CMD_ex_pprof=("$HWPROF" export --format pprof -i "$big" -o "$WORK/x.pb.gz")
    CMD_ex_speedscope=("$HWPROF" export --format speedscope -i "$big" -o "$WORK/x.speedscope.json")
    CMD_ex_firefox=("$HWPROF" export --format firefox -i "$big" -o "$WORK/x.firefox.json")
    CMD_pf_script=("$PERF" script -i "$big")
    interleave "$n" ex_pprof ex_speedscope ex_firefox pf_script
    pf=$(mean_ms pf_script)
    printf '%-44s %10s %10s %12s %12s\n' command "mean ms" "/ perf" "peak KB" "output KB"
    for f in pprof speedscope firefox; do
        local -n cmd="CMD_ex_$f"
        local out=${cmd[-1]}
        printf '%-44s %10s %10s %12s %12s\n' "hwprof export --format $f" "$(mean_ms "ex_$f")" \
            "$(ratio "$(mean_ms "ex_$f")" "$pf")" "$(peak_kb "${cmd[@]}")" "$(($(stat -c %s "$out") / 1024))"
        unset -n cmd
    done
    printf '%-44s %10s %10s %12s\n' "perf script" "$pf" "1.00" "$(peak_kb "${CMD_pf_script[@]}")"
}

# peak_kb CMD...: peak resident memory (KB) of one run of CMD, from /usr/bin/time -f %M.
peak_kb() {
    local f=$WORK/peak.$$
    if [[ -x /usr/bin/time ]]; then
        /usr/bin/time -f %M -o "$f" "$@" >/dev/null 2>&1 || die "failed: $*"
        tail -1 "$f"
    else
        echo "?"
    fi
}

bench_report() {
    find_perf
    find_hwprof
    build_spin2
    local secs=${REPORT_SECS:-12} big=$WORK/big_report.data samples n=${N_REPORT:-3}
    "$PERF" record -q -F 20000 -g -o "$big" -- timeout -s INT "$secs" "$WORK/spin2" 100000000000 2 >/dev/null 2>&1 || true
    samples=$("$HWPROF" report -i "$big" --json --no-children -s comm |
        awk '/"samples":/ { gsub(/[^0-9]/, ""); print; exit }')
    echo "== (b) report --stdio on big.data: ${samples:-?} samples with callchains ($(du -h "$big" | cut -f1))"
    ((${samples:-0} >= 200000)) || echo "warning: fewer than 200k samples; raise REPORT_SECS"
    CMD_hw_report=("$HWPROF" report -i "$big" --stdio)
    CMD_pf_report=("$PERF" report -i "$big" --stdio)
    CMD_pf_nograph=("$PERF" report -i "$big" --stdio -g none)
    CMD_hw_self=("$HWPROF" report -i "$big" --stdio --no-children)
    CMD_pf_self=("$PERF" report -i "$big" --stdio --no-children -g none)
    interleave "$n" hw_report pf_report pf_nograph hw_self pf_self
    printf '%-52s %10s %12s\n' command "mean ms" "peak KB"
    printf '%-52s %10s %12s\n' "hwprof report --stdio" "$(mean_ms hw_report)" "$(peak_kb "${CMD_hw_report[@]}")" \
        "perf report --stdio (children + call graphs)" "$(mean_ms pf_report)" "$(peak_kb "${CMD_pf_report[@]}")" \
        "perf report --stdio -g none" "$(mean_ms pf_nograph)" "$(peak_kb "${CMD_pf_nograph[@]}")" \
        "hwprof report --stdio --no-children" "$(mean_ms hw_self)" "$(peak_kb "${CMD_hw_self[@]}")" \
        "perf report --stdio --no-children -g none" "$(mean_ms pf_self)" "$(peak_kb "${CMD_pf_self[@]}")"
    echo "report speed-up: perf report --stdio / hwprof report --stdio = $(ratio "$(mean_ms pf_report)" "$(mean_ms hw_report)")x;" \
        "vs perf -g none $(ratio "$(mean_ms pf_nograph)" "$(mean_ms hw_report)")x;" \
        "--no-children $(ratio "$(mean_ms pf_self)" "$(mean_ms hw_self)")x"
}

# benches/compare_perf.sh flamegraph: an SVG flame graph from a perf.data of >= 200k
# samples with deep callchains (2 threads, recursion 40 deep over 8 functions, a few
# thousand distinct paths): `hwprof flamegraph -i big.data -o x.svg` vs
# `perf script -i big.data | inferno-collapse-perf | inferno-flamegraph > y.svg`, wall
# time (interleaved) and peak RSS (the pipeline's: the max of its three processes).
#   FLAME_SECS=6   seconds of the `perf record -F 20000 -g` that makes big.data
#   N_FLAME=3      runs per side
#   INFERNO_ROOT   where `cargo install inferno` puts the tools when they are not on PATH
#                  (default target/inferno-tools, kept between runs)
build_deep() {
    cat >"$WORK/deep.c" <<'EOF'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
typedef unsigned long (*fn)(unsigned long, int);
volatile unsigned long sink;
static fn fns[8];
/* Recursion 40 deep; the callee depends on the level, and on the data every 6th
 * level, so there are a few thousand distinct call paths. */
#define DEF(n)                                                                 \
    __attribute__((noinline)) unsigned long f##n(unsigned long x, int d) {    \
        if (d == 0) {                                                          \
            for (int i = 0; i < 20000; i++)                                    \
                x = x * 6364136223846793005UL + n;                             \
            return x;                                                          \
        }                                                                      \
        int k = n * 3 + d + (d % 6 == 0 ? (int)((x >> 40) & 3) : 0);          \
        x = fns[k % 8](x + n, d - 1);                                          \
        sink = x; /* no tail call: keeps the frame */                          \
        return x;                                                              \
    }
DEF(0) DEF(1) DEF(2) DEF(3) DEF(4) DEF(5) DEF(6) DEF(7)
static void *run(void *arg) {
    unsigned long x = (unsigned long)arg;
    for (;;)
        x = f0(x, 40);
    return 0;
}
int main(void) {
    fn all[8] = {f0, f1, f2, f3, f4, f5, f6, f7};
    for (int i = 0; i < 8; i++)
        fns[i] = all[i];
    pthread_t t;
    pthread_create(&t, 0, run, (void *)12345);
    run((void *)67890);
    return 0;
}
EOF
    cc -O1 -g -fno-omit-frame-pointer -pthread -o "$WORK/deep" "$WORK/deep.c" || die "cannot compile deep.c"
}

find_inferno() {
    INFERNO_COLLAPSE=$(command -v inferno-collapse-perf || true)
    INFERNO_FLAMEGRAPH=$(command -v inferno-flamegraph || true)
    if [[ -z $INFERNO_COLLAPSE || -z $INFERNO_FLAMEGRAPH ]]; then
        local root=${INFERNO_ROOT:-$ROOT/target/inferno-tools}
        if [[ ! -x $root/bin/inferno-flamegraph || ! -x $root/bin/inferno-collapse-perf ]]; then
            echo "installing inferno (cargo install inferno --locked --root $root)..." >&2
            cargo install inferno --locked --quiet --root "$root" >&2 || die "cargo install inferno failed"
        fi
        INFERNO_COLLAPSE=$root/bin/inferno-collapse-perf
        INFERNO_FLAMEGRAPH=$root/bin/inferno-flamegraph
    fi
}

# The pipeline being compared (a function, so that `interleave` can time it).
inferno_pipeline() {
    "$PERF" script -i "$FG_BIG" 2>/dev/null | "$INFERNO_COLLAPSE" | "$INFERNO_FLAMEGRAPH" >"$WORK/y.svg"
}

# Peak RSS (KB) of the pipeline: the largest of its three processes.
inferno_pipeline_peak_kb() {
    [[ -x /usr/bin/time ]] || {
        echo "?"
        return
    }
    /usr/bin/time -f %M -o "$WORK/m1" "$PERF" script -i "$FG_BIG" 2>/dev/null |
        /usr/bin/time -f %M -o "$WORK/m2" "$INFERNO_COLLAPSE" |
        /usr/bin/time -f %M -o "$WORK/m3" "$INFERNO_FLAMEGRAPH" >"$WORK/y.svg"
    echo "$(tail -1 "$WORK/m1") $(tail -1 "$WORK/m2") $(tail -1 "$WORK/m3")" |
        awk '{ m = $1; if ($2 > m) m = $2; if ($3 > m) m = $3; printf "%d (perf script %d, collapse %d, flamegraph %d)", m, $1, $2, $3 }'
}

# svg_all_count FILE: the count of the root frame ("all (N unit, 100%)").
svg_all_count() {
    grep -o '<title>all ([0-9,]*' "$1" | head -1 | sed 's/[^0-9]//g'
}

bench_flamegraph() {
    find_perf
    find_hwprof
    find_inferno
    build_deep
    local secs=${FLAME_SECS:-6} n=${N_FLAME:-3} samples
    FG_BIG=$WORK/big_flame.data
    "$PERF" record -q -F 20000 -g -o "$FG_BIG" -- timeout -s INT "$secs" "$WORK/deep" >/dev/null 2>&1 || true
    samples=$("$HWPROF" script -i "$FG_BIG" --format jsonl | grep -c '"type":"sample"' || true)
    echo "== (a) SVG flame graph of big.data: $samples samples, 40-deep recursion ($(du -h "$FG_BIG" | cut -f1))"
    ((samples >= 200000)) || echo "warning: fewer than 200k samples; raise FLAME_SECS"
    # Same picture on both sides: the root's count (inferno-collapse-perf sums periods too).
    "$HWPROF" flamegraph -i "$FG_BIG" -o "$WORK/x.svg" 2>/dev/null || die "hwprof flamegraph failed"
    inferno_pipeline
    echo "root count (sum of periods): hwprof $(svg_all_count "$WORK/x.svg"), perf script | inferno $(svg_all_count "$WORK/y.svg")"
    CMD_hw_flame=("$HWPROF" flamegraph -i "$FG_BIG" -o "$WORK/x.svg")
    CMD_pf_flame=(inferno_pipeline)
    interleave "$n" hw_flame pf_flame
    local hw pf
    hw=$(mean_ms hw_flame)
    pf=$(mean_ms pf_flame)
    printf '%-58s %10s %10s  %s\n' command "mean ms" "median ms" "peak KB"
    printf '%-58s %10s %10s  %s\n' "hwprof flamegraph -i big.data -o x.svg" "$hw" "$(median_ms hw_flame)" "$(peak_kb "${CMD_hw_flame[@]}")"
    printf '%-58s %10s %10s  %s\n' "perf script | inferno-collapse-perf | inferno-flamegraph" "$pf" "$(median_ms pf_flame)" "$(inferno_pipeline_peak_kb)"
    echo "flamegraph speed-up: pipeline / hwprof = $(ratio "$pf" "$hw")x (goal >= 5x); SVGs $(du -h "$WORK/x.svg" | cut -f1) and $(du -h "$WORK/y.svg" | cut -f1)"
}

# bench_probe: per-call overhead of a uprobe'd empty function, PROBE_CALLS calls (default
# 200000): `hwprof probe` (entry + return probes, every hit sampled and paired) against
# `perf stat` counting the `perf probe` events (entry only, and entry + return), each
# minus the bare run. The perf probes are removed afterwards.
bench_probe() {
    find_perf
    find_hwprof
    local n=${PROBE_CALLS:-200000} bin=$WORK/probe_bench grp
    cc -O1 -g -fno-omit-frame-pointer -no-pie -o "$bin" "$ROOT/tests/workloads/probe_lat.c" || die "cc probe_lat.c failed"
    grp=probe_probe_bench
    "$PERF" probe -q -d "$grp:*" >/dev/null 2>&1 || true
    trap '"$PERF" probe -q -d "'"$grp"':*" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
    "$PERF" probe -q -x "$bin" empty >/dev/null 2>&1 || die "perf probe -x $bin empty failed"
    "$PERF" probe -q -x "$bin" 'empty%return' >/dev/null 2>&1 || die "perf probe -x $bin empty%return failed"
    CMD_bare=("$bin" empty "$n")
    CMD_hw_probe=("$HWPROF" probe "uprobe:$bin:empty" -- "$bin" empty "$n")
    CMD_pf_entry=("$PERF" stat -e "$grp:empty" -- "$bin" empty "$n")
    CMD_pf_both=("$PERF" stat -e "$grp:empty,$grp:empty__return" -- "$bin" empty "$n")
    interleave "${N_PROBE:-3}" bare hw_probe pf_entry pf_both
    "$PERF" probe -q -d "$grp:*" >/dev/null 2>&1 || true
    local bare hw pe pb
    bare=$(mean_ms bare)
    hw=$(awk -v t="$(mean_ms hw_probe)" -v b="$bare" -v n="$n" 'BEGIN { printf "%.0f", (t - b) * 1e6 / n }')
    pe=$(awk -v t="$(mean_ms pf_entry)" -v b="$bare" -v n="$n" 'BEGIN { printf "%.0f", (t - b) * 1e6 / n }')
    pb=$(awk -v t="$(mean_ms pf_both)" -v b="$bare" -v n="$n" 'BEGIN { printf "%.0f", (t - b) * 1e6 / n }')
    echo "== probe: $n calls of an empty function (bare run $bare ms)"
    printf '%-58s %10s\n' variant "ns/call"
    printf '%-58s %10s\n' "hwprof probe uprobe:BIN:empty (entry + return, sampled)" "$hw" \
        "perf stat -e probe:empty (entry, counted)" "$pe" \
        "perf stat -e probe:empty,probe:empty__return (counted)" "$pb"
    echo "probe overhead ratio: hwprof / perf stat entry+return = $(ratio "$hw" "$pb")x; / perf stat entry only = $(ratio "$hw" "$pe")x"
}

# with_bpftrace SCRIPT CMD...: runs CMD (its output dropped) while bpftrace runs SCRIPT,
# attached first, then stops bpftrace with SIGINT: its output is in $WORK/bt.out, its CPU
# time ("user sys") in $WORK/tool.t, its peak RSS (KiB) in $WORK/tool.rss.
with_bpftrace() {
    local script=$1 bt w
    shift
    /usr/bin/time -f '%U %S %M' -o "$WORK/tool.rt" bpftrace "$script" >"$WORK/bt.out" 2>&1 &
    bt=$!
    for ((w = 0; w < 100; w++)); do
        grep -q Attaching "$WORK/bt.out" 2>/dev/null && break
        sleep 0.1
    done
    # A script whose BEGIN prints "ready" is waited for until it does: bpftrace runs
    # BEGIN once every probe is attached (libc's uprobes take it 0.5 s and more).
    if grep -q 'BEGIN { printf("ready' "$script"; then
        for ((w = 0; w < 300; w++)); do
            grep -qx ready "$WORK/bt.out" 2>/dev/null && break
            sleep 0.1
        done
    fi
    sleep 0.5
    "$@" >/dev/null || die "$* failed under bpftrace"
    # time(1) ignores SIGINT while it waits: the signal goes to bpftrace.
    pkill -INT -P "$bt" bpftrace || true
    wait "$bt" || true
    awk '{ print $1, $2 }' "$WORK/tool.rt" >"$WORK/tool.t"
    awk '{ print $3 }' "$WORK/tool.rt" >"$WORK/tool.rss"
}

# own_cpu VARIANT "TOOL_USER TOOL_SYS" TARGET_USER TARGET_SYS: a tool's own CPU seconds:
# its rusage, minus the target's when the tool waited for it (every variant but bare and
# bpftrace, which ran beside the target).
own_cpu() {
    local ou os
    read -r ou os <<<"$2"
    if [[ $1 == bare || $1 == bpftrace ]]; then
        awk -v u="$ou" -v s="$os" 'BEGIN { printf "%.3f", u + s }'
    else
        awk -v u="$ou" -v s="$os" -v a="$3" -v b="$4" 'BEGIN { x = u + s - a - b; if (x < 0) x = 0; printf "%.3f", x }'
    fi
}

# bench_probe_trace: the per-call cost of timing a function with a uprobe and a
# uretprobe, on N_CALLS (default 600000) calls of an empty function, measured on the
# target's own wall time (so that each tool's start-up is not counted) against its bare
# run: bpftrace (funclatency-style script: count, per-thread start, log2 histogram in BPF
# maps, attached before the target starts), hwprof probe --engine bpf (the same in
# hwprof's programs) and --engine perf (every hit through the ring buffer, paired here).
# Each run's count is checked. The tool's own CPU time beside.
bench_probe_trace() {
    find_hwprof
    command -v bpftrace >/dev/null || die "bpftrace not found: apt-get install bpftrace"
    [[ -x /usr/bin/time ]] || die "/usr/bin/time not found: apt-get install time"
    local bin=$WORK/probe_lat n=${N_PROBE_TRACE:-3} calls=${N_CALLS:-600000}
    cc -O1 -g -fno-omit-frame-pointer -no-pie -o "$bin" "$ROOT/tests/workloads/probe_lat.c" ||
        die "cannot compile tests/workloads/probe_lat.c"
    printf '%s\n' \
        "uprobe:$bin:empty { @calls = count(); @start[tid] = nsecs; }" \
        "uretprobe:$bin:empty /@start[tid]/ { @us = hist((nsecs - @start[tid]) / 1000); delete(@start[tid]); }" \
        "END { clear(@start); }" >"$WORK/lat.bt"
    local inner=(/usr/bin/time -f '%e %U %S' -o "$WORK/inner.t" "$bin" empty "$calls")
    local v i tool own tw tu ts
    local variants=(bare bpftrace hw_bpf hw_perf)
    for v in "${variants[@]}"; do : >"$WORK/$v.lat"; done
    for ((i = 0; i < n; i++)); do
        for v in "${variants[@]}"; do
            tool="0 0"
            case $v in
            bare) "${inner[@]}" >/dev/null || die "probe_lat failed" ;;
            bpftrace)
                with_bpftrace "$WORK/lat.bt" "${inner[@]}"
                grep -q "^@calls: $calls\$" "$WORK/bt.out" ||
                    die "bpftrace did not count $calls calls: $(grep @calls "$WORK/bt.out")"
                tool=$(cat "$WORK/tool.t")
                ;;
            hw_bpf | hw_perf)
                /usr/bin/time -f '%U %S' -o "$WORK/tool.t" "$HWPROF" probe --engine "${v#hw_}" \
                    "uprobe:$bin:empty" -o "$WORK/probe.out" -- "${inner[@]}" >/dev/null 2>&1 ||
                    die "hwprof probe --engine ${v#hw_} failed"
                grep -q ": $calls calls" "$WORK/probe.out" ||
                    die "hwprof probe --engine ${v#hw_} did not count $calls calls: $(head -1 "$WORK/probe.out")"
                tool=$(cat "$WORK/tool.t")
                ;;
            esac
            # The target's wall; the tool's own CPU.
            read -r tw tu ts <"$WORK/inner.t"
            own=$(own_cpu "$v" "$tool" "$tu" "$ts")
            echo "$tw $own" >>"$WORK/$v.lat"
        done
    done
    echo "== probe cost: $calls calls of an empty function under a uprobe + uretprobe, $n runs each, interleaved"
    echo "   (target s: mean [min - max] of the runs; ns/call from the means, and from the medians)"
    printf '%-62s %22s %10s %10s %12s\n' variant "target s" "ns/call" "(median)" "tool CPU s"
    local bare_w bare_m mean_wall med_wall span mean_cpu per per_m
    bare_w=$(awk '{ s += $1; n++ } END { printf "%.3f", s / n }' "$WORK/bare.lat")
    bare_m=$(sort -n "$WORK/bare.lat" | awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    local -A label=(
        [bare]="bare"
        [bpftrace]="bpftrace, funclatency-style script (BPF maps)"
        [hw_bpf]="hwprof probe --engine bpf (BPF maps)"
        [hw_perf]="hwprof probe --engine perf (every hit to user space)"
    )
    local -A per_call=() per_med=()
    for v in "${variants[@]}"; do
        mean_wall=$(awk '{ s += $1; n++ } END { printf "%.3f", s / n }' "$WORK/$v.lat")
        med_wall=$(sort -n "$WORK/$v.lat" | awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
        span=$(sort -n "$WORK/$v.lat" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "[%.2f - %.2f]", lo, hi }')
        mean_cpu=$(awk '{ s += $2; n++ } END { printf "%.3f", s / n }' "$WORK/$v.lat")
        per=$(awk -v t="$mean_wall" -v b="$bare_w" -v c="$calls" 'BEGIN { printf "%.0f", (t - b) * 1e9 / c }')
        per_m=$(awk -v t="$med_wall" -v b="$bare_m" -v c="$calls" 'BEGIN { printf "%.0f", (t - b) * 1e9 / c }')
        printf '%-62s %22s %10s %10s %12s\n' "${label[$v]}" "$mean_wall $span" "$per" "$per_m" "$mean_cpu"
        per_call[$v]=$per
        per_med[$v]=$per_m
    done
    echo "probe per-call cost: hwprof bpf / bpftrace = $(ratio "${per_call[hw_bpf]}" "${per_call[bpftrace]}") (medians $(ratio "${per_med[hw_bpf]}" "${per_med[bpftrace]}")); hwprof perf / bpftrace = $(ratio "${per_call[hw_perf]}" "${per_call[bpftrace]}") (medians $(ratio "${per_med[hw_perf]}" "${per_med[bpftrace]}"))"
}

# bench_offcpu: the cost of recording off-CPU time on a sleep/wake-heavy workload
# (sleeper: 3000 x 1 ms nanosleep, ~3000 switches out and in), against the bare run, with
# `perf record -e sched:sched_switch,cpu-clock -g` (what hwprof offcpu records) beside.
bench_offcpu() {
    find_perf
    find_hwprof
    cc -O1 -g -fno-omit-frame-pointer -o "$WORK/sleeper" "$ROOT/tests/workloads/sleeper.c" ||
        die "cannot compile tests/workloads/sleeper.c"
    local n=${N_OFFCPU:-5} k=${OFFCPU_SLEEPS:-3000}
    CMD_bare=("$WORK/sleeper" "$k" 1)
    CMD_hw_off=("$HWPROF" offcpu --folded -o "$WORK/off.folded" -- "$WORK/sleeper" "$k" 1)
    CMD_pf_off=("$PERF" record -q -e sched:sched_switch,cpu-clock -g -o "$WORK/off.data" -- "$WORK/sleeper" "$k" 1)
    interleave "$n" bare hw_off pf_off
    local b h p
    b=$(mean_ms bare)
    h=$(mean_ms hw_off)
    p=$(mean_ms pf_off)
    echo "== off-CPU recording: sleeper $k x 1 ms, $n runs each, interleaved"
    printf '%-58s %10s %10s\n' command "mean ms" "vs bare"
    printf '%-58s %10s %10s\n' bare "$b" 1.00 \
        "hwprof offcpu (record + pair + fold)" "$h" "$(ratio "$h" "$b")" \
        "perf record -e sched:sched_switch,cpu-clock -g (record only)" "$p" "$(ratio "$p" "$b")"
    echo "offcpu overhead: hwprof $(ratio "$h" "$b")x bare, perf record $(ratio "$p" "$b")x bare, hwprof/perf $(ratio "$h" "$p")"
}

# Tracing cost where every event is a context switch: tests/workloads/pingpong.c (two
# processes bouncing a byte over pipes, 2 x PING_ROUNDS switches) bare, under a bpftrace
# offcputime-style script (user+kernel stacks and sums in BPF maps), under hwprof offcpu
# on its BPF engine and on perf events, and under perf record -e sched:sched_switch -g.
# The workload times itself (/usr/bin/time inside each tool), so the figures are the
# target's own wall time; each tool's own CPU is its rusage minus the workload's (BPF
# programs run in the traced tasks: their cost is in the target's time).
bench_offcpu_trace() {
    find_perf
    find_hwprof
    command -v bpftrace >/dev/null || die "bpftrace not found: apt-get install bpftrace"
    [[ -x /usr/bin/time ]] || die "/usr/bin/time not found: apt-get install time"
    cc -O1 -g -fno-omit-frame-pointer -o "$WORK/pingpong" "$ROOT/tests/workloads/pingpong.c" ||
        die "cannot compile tests/workloads/pingpong.c"
    local n=${N_PING:-5} k=${PING_ROUNDS:-100000}
    cat >"$WORK/off.bt" <<'EOF'
tracepoint:sched:sched_switch
{
  if (args->prev_pid != 0 && comm == "pingpong") {
    @start[args->prev_pid] = nsecs;
    @ks[args->prev_pid] = kstack;
    @us[args->prev_pid] = ustack;
  }
  $t = @start[args->next_pid];
  if ($t) {
    @off[args->next_pid, @ks[args->next_pid], @us[args->next_pid]] = sum(nsecs - $t);
    delete(@start[args->next_pid]);
  }
}
END { clear(@start); clear(@ks); clear(@us); }
EOF
    # PING_PIN=1: both processes on CPU 0 (taskset), so that each switch is a direct
    # hand-over and a tracer's cost adds to it; unpinned (the default), wakeups cross
    # CPUs and their latency (idle states, IPIs) dominates, which a tracer's activity
    # can even shorten.
    local pin=()
    [[ ${PING_PIN:-0} == 1 ]] && pin=(taskset -c 0)
    local inner=(/usr/bin/time -f '%e %U %S' -o "$WORK/inner.t" "${pin[@]}" "$WORK/pingpong" "$k")
    local v i tool own tw tu ts
    local variants=(bare bpftrace hw_bpf hw_perf perf)
    for v in "${variants[@]}"; do : >"$WORK/$v.ping"; done
    for ((i = 0; i < n; i++)); do
        for v in "${variants[@]}"; do
            tool="0 0"
            case $v in
            bare) "${inner[@]}" >/dev/null || die "pingpong failed" ;;
            bpftrace)
                with_bpftrace "$WORK/off.bt" "${inner[@]}"
                tool=$(cat "$WORK/tool.t")
                ;;
            hw_bpf | hw_perf)
                /usr/bin/time -f '%U %S' -o "$WORK/tool.t" "$HWPROF" offcpu --engine "${v#hw_}" \
                    --call-graph fp --folded -o "$WORK/off.folded" -- "${inner[@]}" >/dev/null 2>&1 ||
                    die "hwprof offcpu --engine ${v#hw_} failed"
                tool=$(cat "$WORK/tool.t")
                ;;
            perf)
                /usr/bin/time -f '%U %S' -o "$WORK/tool.t" "$PERF" record -q -e sched:sched_switch -g \
                    -o "$WORK/sw.data" -- "${inner[@]}" >/dev/null 2>&1 || die "perf record failed"
                tool=$(cat "$WORK/tool.t")
                ;;
            esac
            # The target's wall and CPU; the tool's own CPU.
            read -r tw tu ts <"$WORK/inner.t"
            own=$(own_cpu "$v" "$tool" "$tu" "$ts")
            echo "$tw $own $(awk -v a="$tu" -v b="$ts" 'BEGIN { printf "%.3f", a + b }')" >>"$WORK/$v.ping"
        done
    done
    echo "== tracing cost: pingpong $k rounds ($((2 * k)) context switches)${pin:+, pinned to CPU 0}, $n runs each, interleaved"
    printf '%-62s %10s %8s %12s %8s %12s\n' variant "target s" "vs bare" "target CPU s" "vs bare" "tool CPU s"
    local bare_w bare_c mean_wall mean_cpu mean_tcpu
    bare_w=$(awk '{ s += $1; n++ } END { printf "%.3f", s / n }' "$WORK/bare.ping")
    bare_c=$(awk '{ s += $3; n++ } END { printf "%.3f", s / n }' "$WORK/bare.ping")
    local -A label=(
        [bare]="bare"
        [bpftrace]="bpftrace, offcputime-style script (sums in BPF maps)"
        [hw_bpf]="hwprof offcpu --engine bpf (sums in BPF maps)"
        [hw_perf]="hwprof offcpu --engine perf (every switch to user space)"
        [perf]="perf record -e sched:sched_switch -g"
    )
    local -A walls=() cpus=()
    for v in "${variants[@]}"; do
        mean_wall=$(awk '{ s += $1; n++ } END { printf "%.3f", s / n }' "$WORK/$v.ping")
        mean_cpu=$(awk '{ s += $2; n++ } END { printf "%.3f", s / n }' "$WORK/$v.ping")
        mean_tcpu=$(awk '{ s += $3; n++ } END { printf "%.3f", s / n }' "$WORK/$v.ping")
        printf '%-62s %10s %8s %12s %8s %12s\n' "${label[$v]}" "$mean_wall" "$(ratio "$mean_wall" "$bare_w")" \
            "$mean_tcpu" "$(ratio "$mean_tcpu" "$bare_c")" "$mean_cpu"
        walls[$v]=$mean_wall
        cpus[$v]=$mean_tcpu
    done
    echo "offcpu tracing, target wall: hwprof bpf $(ratio "${walls[hw_bpf]}" "$bare_w")x bare, bpftrace $(ratio "${walls[bpftrace]}" "$bare_w")x bare, hwprof bpf / bpftrace $(ratio "${walls[hw_bpf]}" "${walls[bpftrace]}")"
    echo "offcpu tracing, target CPU (where a BPF program's time is charged): hwprof bpf $(ratio "${cpus[hw_bpf]}" "$bare_c")x bare, bpftrace $(ratio "${cpus[bpftrace]}" "$bare_c")x bare, hwprof bpf / bpftrace $(ratio "${cpus[hw_bpf]}" "${cpus[bpftrace]}")"
}

# Tracing cost where every event is an allocator call: a C loop of MEM_PAIRS (default
# 1000000) malloc(64)/free pairs (-O1, frame pointers; an asm barrier keeps each pair)
# that times its own loop (CLOCK_MONOTONIC) and reads its own CPU (getrusage) into a
# file, bare, under a bpftrace script doing what hwprof memory does in the kernel
# (uprobe + uretprobe on libc's malloc, uprobe on free, the size paired per tid, bytes
# summed per user stack, a map of the live pointers with size and time, deleted on
# free; nothing printed per event), under hwprof memory (BPF engine, frame-pointer
# stacks) and under heaptrack (LD_PRELOAD: every call recorded in-process and written
# through a pipe to heaptrack_interpret). Runs interleaved; each run's answer checked.
# Beside the target's loop time and CPU: each tool's own CPU (its rusage less the
# target's) and peak RSS (/usr/bin/time %M: the largest process of the tool's tree),
# then the peak RSS again at MEM_PAIRS_BIG (default 4000000) pairs: hwprof's must not
# grow with the calls (the live blocks are kept in the kernel's maps, not in hwprof).
# bpftrace 0.17 puts its uprobes on libc for every process (-p and -c do not filter
# them; the comm predicate does), hwprof on the target's processes only.
bench_memory_trace() {
    find_hwprof
    command -v bpftrace >/dev/null || die "bpftrace not found: apt-get install bpftrace"
    command -v heaptrack >/dev/null || die "heaptrack not found: apt-get install heaptrack"
    [[ -x /usr/bin/time ]] || die "/usr/bin/time not found: apt-get install time"
    local n=${N_MEM_TRACE:-5} k=${MEM_PAIRS:-1000000} big=${MEM_PAIRS_BIG:-4000000} nbig=${N_MEM_BIG:-1}
    cat >"$WORK/alloc_loop.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
__attribute__((noinline)) void pairs(long n)
{
    for (long i = 0; i < n; i++) {
        void *p = malloc(64);
        __asm__ volatile("" : : "r"(p) : "memory");
        free(p);
    }
}
int main(int argc, char **argv)
{
    struct timespec a, b;
    struct rusage ru;
    if (argc < 3)
        return 2;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pairs(atol(argv[1]));
    clock_gettime(CLOCK_MONOTONIC, &b);
    getrusage(RUSAGE_SELF, &ru);
    FILE *f = fopen(argv[2], "w");
    if (!f)
        return 1;
    fprintf(f, "%.6f %.6f %.6f\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9,
            ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
            ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
    return fclose(f) != 0;
}
EOF
    cc -O1 -g -fno-omit-frame-pointer -o "$WORK/alloc_loop" "$WORK/alloc_loop.c" || die "cannot compile alloc_loop"
    local libc
    libc=$(ldd "$WORK/alloc_loop" | awk '$1 ~ /^libc\.so/ { print $3 }')
    [[ -n $libc ]] || die "alloc_loop links no libc.so"
    cat >"$WORK/mem.bt" <<EOF
BEGIN { printf("ready\\n"); }
uprobe:$libc:malloc /comm == "alloc_loop"/ { @size[tid] = arg0; }
uretprobe:$libc:malloc /@size[tid]/
{
  @bytes[ustack] = sum(@size[tid]);
  @live[retval] = (@size[tid], nsecs);
  delete(@size[tid]);
}
uprobe:$libc:free /comm == "alloc_loop"/ { delete(@live[arg0]); }
END { clear(@size); clear(@live); }
EOF
    # memory_trace_run VARIANT PAIRS: one run; appends "loop_s own_cpu_s target_cpu_s
    # command_s peak_kib" to $WORK/VARIANT.PAIRS.mem (command_s: 0 for bpftrace, which
    # runs beside the target).
    memory_trace_run() {
        local v=$1 pairs=$2 tool tw tu ts tu2 ts2 own cmd rss
        local inner=("$WORK/alloc_loop" "$pairs" "$WORK/inner.t")
        rm -f "$WORK/inner.t"
        case $v in
        bare)
            /usr/bin/time -f '%e %U %S %M' -o "$WORK/tool.t" "${inner[@]}" || die "alloc_loop failed"
            ;;
        bpftrace)
            with_bpftrace "$WORK/mem.bt" "${inner[@]}"
            grep -q "]: $((pairs * 64))\$" "$WORK/bt.out" ||
                die "bpftrace did not sum $((pairs * 64)) bytes: $(tail -3 "$WORK/bt.out")"
            echo "0 $(cat "$WORK/tool.t") $(cat "$WORK/tool.rss")" >"$WORK/tool.t"
            ;;
        hwprof)
            /usr/bin/time -f '%e %U %S %M' -o "$WORK/tool.t" "$HWPROF" memory --folded \
                -o "$WORK/mem.folded" -- "${inner[@]}" >/dev/null 2>&1 || die "hwprof memory failed"
            grep -q ";pairs $((pairs * 64))\$" "$WORK/mem.folded" ||
                die "hwprof memory did not sum $((pairs * 64)) bytes in pairs: $(grep pairs "$WORK/mem.folded")"
            ;;
        heaptrack)
            rm -f "$WORK"/ht.*
            /usr/bin/time -f '%e %U %S %M' -o "$WORK/tool.t" heaptrack -o "$WORK/ht" "${inner[@]}" \
                >"$WORK/ht.out" 2>&1 || die "heaptrack failed: $(tail -3 "$WORK/ht.out")"
            awk -v k="$pairs" '/^[[:space:]]*allocations:/ { n = $2 } END { exit !(n >= k) }' "$WORK/ht.out" ||
                die "heaptrack did not see $pairs allocations: $(grep allocations: "$WORK/ht.out")"
            ;;
        esac
        [[ -s $WORK/inner.t ]] || die "$v: alloc_loop wrote no times"
        read -r tw tu ts <"$WORK/inner.t"
        read -r cmd tu2 ts2 rss <"$WORK/tool.t"
        tool="$tu2 $ts2"
        own=$(own_cpu "$v" "$tool" "$tu" "$ts")
        echo "$tw $own $(awk -v a="$tu" -v b="$ts" 'BEGIN { printf "%.3f", a + b }') $cmd $rss" >>"$WORK/$v.$pairs.mem"
    }
    local variants=(bare bpftrace hwprof heaptrack) v i
    for v in "${variants[@]}"; do : >"$WORK/$v.$k.mem" && : >"$WORK/$v.$big.mem"; done
    for ((i = 0; i < n; i++)); do
        for v in "${variants[@]}"; do memory_trace_run "$v" "$k"; done
    done
    for ((i = 0; i < nbig; i++)); do
        for v in bpftrace hwprof heaptrack; do memory_trace_run "$v" "$big"; done
    done
    # col FILE N: mean, median, min and max of column N.
    col() {
        awk -v c="$2" '{ print $c }' "$1" | sort -g |
            awk '{ v[NR] = $1; s += $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.4f %.4f %.4f %.4f", s / NR, m, v[1], v[NR] }'
    }
    local -A label=(
        [bare]="bare"
        [bpftrace]="bpftrace: malloc uprobe+uretprobe, free uprobe, maps"
        [hwprof]="hwprof memory (BPF engine, fp stacks)"
        [heaptrack]="heaptrack -o FILE (LD_PRELOAD)"
    )
    echo "== allocator tracing cost: alloc_loop $k malloc(64)/free pairs, $n runs each, interleaved"
    echo "   (target loop s: mean, median [min - max]; ns/pair over bare from the means; command s: the whole"
    echo "    tool run, start-up and output included; tool CPU s: its rusage less the target's)"
    printf '%-54s %31s %8s %9s %10s %9s %9s %10s\n' variant "target loop s" "vs bare" "ns/pair" "target CPU" "command s" "tool CPU" "peak KiB"
    local mean med lo hi bare_w cpu tcpu cmd rss
    read -r bare_w _ <<<"$(col "$WORK/bare.$k.mem" 1)"
    local -A walls=() meds=() owns=() rsss=()
    for v in "${variants[@]}"; do
        read -r mean med lo hi <<<"$(col "$WORK/$v.$k.mem" 1)"
        read -r cpu _ <<<"$(col "$WORK/$v.$k.mem" 2)"
        read -r tcpu _ <<<"$(col "$WORK/$v.$k.mem" 3)"
        read -r cmd _ <<<"$(col "$WORK/$v.$k.mem" 4)"
        read -r _ _ _ rss <<<"$(col "$WORK/$v.$k.mem" 5)"
        [[ $v == bpftrace ]] && cmd=-
        printf '%-54s %31s %8s %9s %10s %9s %9s %10s\n' "${label[$v]}" "$mean $med [$lo - $hi]" \
            "$(ratio "$mean" "$bare_w")" \
            "$(awk -v t="$mean" -v b="$bare_w" -v k="$k" 'BEGIN { printf "%.0f", (t - b) * 1e9 / k }')" \
            "$tcpu" "$cmd" "$cpu" "${rss%.*}"
        walls[$v]=$mean meds[$v]=$med owns[$v]=$cpu rsss[$v]=${rss%.*}
    done
    echo "memory tracing, target loop: hwprof $(ratio "${walls[hwprof]}" "$bare_w")x bare, bpftrace $(ratio "${walls[bpftrace]}" "$bare_w")x, heaptrack $(ratio "${walls[heaptrack]}" "$bare_w")x; hwprof/bpftrace $(ratio "${walls[hwprof]}" "${walls[bpftrace]}") (medians $(ratio "${meds[hwprof]}" "${meds[bpftrace]}")), hwprof/heaptrack $(ratio "${walls[hwprof]}" "${walls[heaptrack]}") (medians $(ratio "${meds[hwprof]}" "${meds[heaptrack]}"))"
    echo "memory tracing, tool CPU: hwprof/bpftrace $(ratio "${owns[hwprof]}" "${owns[bpftrace]}"), hwprof/heaptrack $(ratio "${owns[hwprof]}" "${owns[heaptrack]}"); peak RSS hwprof/bpftrace $(ratio "${rsss[hwprof]}" "${rsss[bpftrace]}"), hwprof/heaptrack $(ratio "${rsss[hwprof]}" "${rsss[heaptrack]}")"
    ((nbig > 0)) || return 0
    echo "== peak RSS (KiB, max of the runs) by pairs: $k ($n runs) and $big ($nbig)"
    printf '%-54s %12s %12s %8s %14s\n' variant "$k" "$big" growth "target loop s"
    local a b
    for v in bpftrace hwprof heaptrack; do
        read -r _ _ _ a <<<"$(col "$WORK/$v.$k.mem" 5)"
        read -r _ _ _ b <<<"$(col "$WORK/$v.$big.mem" 5)"
        read -r mean _ <<<"$(col "$WORK/$v.$big.mem" 1)"
        printf '%-54s %12s %12s %8s %14s\n' "${label[$v]}" "${a%.*}" "${b%.*}" "$(ratio "$b" "$a")" "$mean"
    done
}

# The harness itself: what one measured run costs beyond the command, for the same
# events on both sides (hwprof bench also computes its statistics and bootstrap
# intervals, included in its time).
bench_harness() {
    find_perf
    find_hwprof
    local n=${N_BENCH:-200} rep=${N_BENCH_REP:-5}
    local ev=task-clock,page-faults,context-switches,instructions,cycles,branch-misses,cache-misses
    cc -O2 -o "$WORK/work" "$ROOT/tests/workloads/work.c" || die "cannot compile tests/workloads/work.c"
    "$HWPROF" bench -r 2 -e "$ev" -- true >/dev/null 2>&1 || die "'$HWPROF bench -- true' fails"
    echo "hwprof: $HWPROF"
    echo "perf:   $PERF ($("$PERF" --version))"
    echo "cpus:   $(nproc), kernel $(uname -r)"
    echo
    CMD_hw_true=("$HWPROF" bench -r "$n" --warmup 0 -e "$ev" -- true)
    CMD_perf_true=("$PERF" stat -r "$n" -e "$ev" -- true)
    interleave "$rep" hw_true perf_true
    local hw pf
    hw=$(mean_ms hw_true)
    pf=$(mean_ms perf_true)
    local hw_run pf_run
    hw_run=$(awk -v t="$hw" -v n="$n" 'BEGIN { printf "%.3f", t / n }')
    pf_run=$(awk -v t="$pf" -v n="$n" 'BEGIN { printf "%.3f", t / n }')
    echo "== bench harness: -r $n of \`true\` with -e $ev, $rep invocations each, interleaved"
    printf '%-34s %12s %12s\n' variant "total ms" "ms per run"
    printf '%-34s %12s %12s\n' "hwprof bench -r $n" "$hw" "$hw_run"
    printf '%-34s %12s %12s\n' "perf stat -r $n" "$pf" "$pf_run"
    echo "bench harness per run: hwprof $hw_run ms, perf stat -r $pf_run ms, ratio $(ratio "$hw_run" "$pf_run")"
    echo
    # The same on a 20 ms CPU-bound command: the harness must not slow the command.
    local m=$((n / 10))
    CMD_hw_work=("$HWPROF" bench -r "$m" --warmup 0 -e "$ev" -- "$WORK/work" 20)
    CMD_perf_work=("$PERF" stat -r "$m" -e "$ev" -- "$WORK/work" 20)
    CMD_bare_work=(bash -c "for ((i = 0; i < $m; i++)); do '$WORK/work' 20; done")
    interleave "$rep" bare_work hw_work perf_work
    local b h p
    b=$(mean_ms bare_work)
    h=$(mean_ms hw_work)
    p=$(mean_ms perf_work)
    echo "== bench on work 20 (~20 ms of CPU), -r $m, $rep invocations each, interleaved"
    printf '%-34s %12s %12s\n' variant "total ms" "vs bare"
    printf '%-34s %12s %12s\n' "bare (bash loop)" "$b" "1.00"
    printf '%-34s %12s %12s\n' "hwprof bench -r $m" "$h" "$(ratio "$h" "$b")"
    printf '%-34s %12s %12s\n' "perf stat -r $m" "$p" "$(ratio "$p" "$b")"
    echo "bench on work: hwprof $(ratio "$h" "$b")x bare, perf $(ratio "$p" "$b")x bare, hwprof/perf $(ratio "$h" "$p")"
}

# benches/compare_perf.sh memory: does reading a recording take memory that grows with
# it? The 2-thread loop recorded by `perf record -F 20000 -g` for each of MEM_SECS
# seconds; on each file, the peak RSS (and wall time, one run each, same file, same
# page cache) of `hwprof report --stdio` vs `perf report --stdio`, `hwprof flamegraph`
# vs `perf script | inferno` (perf script's own), and `hwprof script` vs `perf script`.
bench_memory() {
    find_perf
    find_hwprof
    build_spin2
    [[ -x /usr/bin/time ]] || die "/usr/bin/time is needed for peak RSS (apt-get install time)"
    local secs f
    # peak TOOL CMD...: "KB s" of one run.
    peak() {
        /usr/bin/time -f '%M %e' -o "$WORK/peak" "$@" >/dev/null 2>&1 || die "failed: $*"
        tail -1 "$WORK/peak"
    }
    printf '%-6s %9s %9s | %-20s %-20s | %-20s | %-20s %-20s\n' secs MB samples \
        "hwprof report KB s" "perf report KB s" "hwprof flame KB s" \
        "hwprof script KB s" "perf script KB s"
    for secs in ${MEM_SECS:-2 20 200}; do
        f=$WORK/mem_$secs.data
        "$PERF" record -q -F 20000 -g -o "$f" -- timeout -s INT "$secs" "$WORK/spin2" 100000000000 2 >/dev/null 2>&1 || true
        local n hr pr hf ps hs
        n=$("$HWPROF" report -i "$f" --json --no-children -s comm |
            awk '/"samples":/ { gsub(/[^0-9]/, ""); print; exit }')
        hr=$(peak "$HWPROF" report -i "$f" --stdio)
        pr=$(peak "$PERF" report -i "$f" --stdio)
        hf=$(peak "$HWPROF" flamegraph -i "$f" -o "$WORK/mem.svg")
        ps=$(peak "$PERF" script -i "$f")
        hs=$(peak "$HWPROF" script -i "$f")
        printf '%-6s %9s %9s | %-20s %-20s | %-20s | %-20s %-20s\n' "$secs" \
            "$(($(stat -c %s "$f") / 1000000))" "${n:-?}" "$hr" "$pr" "$hf" "$hs" "$ps"
        rm -f "$f"
    done
}

# bench_dwarf: --call-graph dwarf. (a) A real program without frame pointers (hwprof
# report, a Rust release binary, over libc, six times in a row) recorded at -F DWARF_F
# by perf (--call-graph dwarf) and by hwprof (--keep-raw-stacks: the same 8 KiB stack
# copies); each file drawn by hwprof flamegraph (unwinding every sample) and by perf
# script | inferno-collapse-perf | inferno-flamegraph (perf unwinds with libdw).
# (b) Recording tests/workloads/dwarf_chain.c (-O2, no frame pointers, 3 s) with both
# tools at the same -F and -m: wall time against the bare run, bytes per sample, lost
# samples.
bench_dwarf() {
    find_perf
    find_hwprof
    find_inferno
    local n=${N_DWARF:-3} f=${DWARF_F:-4000} pages=${DWARF_PAGES:-16}
    local loop="for i in 1 2 3 4 5 6; do '$HWPROF' report -i '$WORK/input.data' --stdio > '$WORK/rep.txt' 2>&1; done"
    cc -O2 -g -fomit-frame-pointer -o "$WORK/chain" "$ROOT/tests/workloads/dwarf_chain.c" || die "cc dwarf_chain.c failed"
    "$HWPROF" record -q --call-graph dwarf --keep-raw-stacks -F 4000 -o "$WORK/input.data" -- "$WORK/chain" 20 >/dev/null 2>&1 || die "hwprof record failed"
    "$PERF" record -q -N --call-graph dwarf -F "$f" -o "$WORK/dw_perf.data" -- bash -c "$loop" >/dev/null 2>&1 || die "perf record --call-graph dwarf failed"
    "$HWPROF" record -q --call-graph dwarf --keep-raw-stacks -F "$f" -o "$WORK/dw_raw.data" -- bash -c "$loop" >/dev/null 2>&1 || die "hwprof record --keep-raw-stacks failed"
    local file hw pf
    for file in dw_perf dw_raw; do
        FG_BIG=$WORK/$file.data
        echo "== (a) flame graph of $file.data (--call-graph dwarf, $(samples_in "$FG_BIG") samples, $(du -h "$FG_BIG" | cut -f1))"
        CMD_hw_dw=("$HWPROF" flamegraph -i "$FG_BIG" -o "$WORK/x.svg")
        CMD_pf_dw=(inferno_pipeline)
        interleave "$n" hw_dw pf_dw
        hw=$(mean_ms hw_dw)
        pf=$(mean_ms pf_dw)
        printf '%-58s %10s %10s  %s\n' command "mean ms" "median ms" "peak KB"
        printf '%-58s %10s %10s  %s\n' "hwprof flamegraph -i $file.data" "$hw" "$(median_ms hw_dw)" "$(peak_kb "${CMD_hw_dw[@]}")"
        printf '%-58s %10s %10s  %s\n' "perf script | inferno-collapse-perf | inferno-flamegraph" "$pf" "$(median_ms pf_dw)" "$(inferno_pipeline_peak_kb)"
        echo "dwarf flamegraph ($file): hwprof / pipeline = $(ratio "$hw" "$pf")x (goal <= 0.05x)"
    done
    echo
    echo "== (b) record --call-graph dwarf -F $f -m $pages of dwarf_chain (C -O2, no frame pointers), $n runs each, interleaved"
    CMD_bare_dw=("$WORK/chain" 30)
    CMD_hw_rec=("$HWPROF" record -q --call-graph dwarf -F "$f" -m "$pages" -o "$WORK/rec_hw.data" -- "$WORK/chain" 30)
    CMD_pf_rec=("$PERF" record -q -N --call-graph dwarf -F "$f" -m "$pages" -o "$WORK/rec_pf.data" -- "$WORK/chain" 30)
    interleave "$n" bare_dw hw_rec pf_rec
    local bare hwr pfr
    bare=$(mean_ms bare_dw)
    hwr=$(mean_ms hw_rec)
    pfr=$(mean_ms pf_rec)
    printf '%-8s %10s %10s %12s %12s %8s\n' tool "mean ms" "vs bare" "samples" "B/sample" lost
    printf '%-8s %10s %10s\n' bare "$bare" 1.00
    local tool data s b
    for tool in hwprof perf; do
        data=$WORK/rec_hw.data
        [[ $tool == perf ]] && data=$WORK/rec_pf.data
        s=$(samples_in "$data")
        b=$(awk -v sz="$(stat -c %s "$data")" -v n="$s" 'BEGIN { if (n) printf "%.0f", sz / n; else print "nan" }')
        local t=$hwr
        [[ $tool == perf ]] && t=$pfr
        printf '%-8s %10s %10s %12s %12s %8s\n' "$tool" "$t" "$(ratio "$t" "$bare")" "$s" "$b" "$(lost_in "$data")"
    done
    echo "dwarf record: hwprof $(ratio "$hwr" "$bare")x bare, perf $(ratio "$pfr" "$bare")x bare; bytes per sample hwprof/perf = $(ratio "$(stat -c %s "$WORK/rec_hw.data")" "$(stat -c %s "$WORK/rec_pf.data")")x of the files (same workload, -F, -m)"
}

# Tracing cost where every event is a syscall: a loop of IO_PAIRS (default 1000000)
# 1-byte write/read pairs on a pipe (2 x IO_PAIRS syscalls), bare, under a bpftrace script
# on raw_syscalls:sys_enter/sys_exit (per-tid start, syscall and user stack; ns summed
# per (stack, syscall) in a map: what `hwprof io` keeps, without its per-fd names and
# histograms) and under hwprof io on its BPF engine. As offcpu-trace: the target's own
# wall and CPU time (inside each tool), each tool's own CPU and hwprof's peak RSS beside.
bench_io_trace() {
    find_hwprof
    command -v bpftrace >/dev/null || die "bpftrace not found: apt-get install bpftrace"
    [[ -x /usr/bin/time ]] || die "/usr/bin/time not found: apt-get install time"
    local n=${N_IO:-5} k=${IO_PAIRS:-1000000}
    cat >"$WORK/io_loop.c" <<'EOF'
#include <stdlib.h>
#include <unistd.h>
__attribute__((noinline)) void pairs(int *p, long n)
{
    char c = 'x';
    for (long i = 0; i < n; i++)
        if (write(p[1], &c, 1) != 1 || read(p[0], &c, 1) != 1)
            exit(1);
}
int main(int argc, char **argv)
{
    int p[2];
    if (argc < 2 || pipe(p) != 0)
        return 2;
    pairs(p, atol(argv[1]));
    return 0;
}
EOF
    cc -O1 -g -fno-omit-frame-pointer -o "$WORK/io_loop" "$WORK/io_loop.c" || die "cannot compile io_loop"
    cat >"$WORK/io.bt" <<'EOF'
tracepoint:raw_syscalls:sys_enter /comm == "io_loop"/
{
  @start[tid] = nsecs; @nr[tid] = args->id; @st[tid] = ustack;
}
tracepoint:raw_syscalls:sys_exit /@start[tid]/
{
  @ns[@st[tid], @nr[tid]] = sum(nsecs - @start[tid]);
  delete(@start[tid]); delete(@nr[tid]); delete(@st[tid]);
}
END { clear(@start); clear(@nr); clear(@st); }
EOF
    local inner=(/usr/bin/time -f '%e %U %S' -o "$WORK/inner.t" "$WORK/io_loop" "$k")
    local v i tool own tw tu ts
    local variants=(bare bpftrace hw_bpf)
    for v in "${variants[@]}"; do : >"$WORK/$v.io"; done
    : >"$WORK/hw_bpf.rss"
    for ((i = 0; i < n; i++)); do
        for v in "${variants[@]}"; do
            tool="0 0"
            case $v in
            bare) "${inner[@]}" >/dev/null || die "io_loop failed" ;;
            bpftrace)
                with_bpftrace "$WORK/io.bt" "${inner[@]}"
                tool=$(cat "$WORK/tool.t")
                ;;
            hw_bpf)
                /usr/bin/time -f '%U %S %M' -o "$WORK/tool.t" "$HWPROF" io --engine bpf \
                    --report -o "$WORK/io.report" -- "${inner[@]}" >/dev/null 2>&1 ||
                    die "hwprof io --engine bpf failed"
                grep -q "  read pipe:" "$WORK/io.report" || die "hwprof io: no reads of the pipe"
                awk '{ print $3 }' "$WORK/tool.t" >>"$WORK/hw_bpf.rss"
                tool=$(awk '{ print $1, $2 }' "$WORK/tool.t")
                ;;
            esac
            read -r tw tu ts <"$WORK/inner.t"
            own=$(own_cpu "$v" "$tool" "$tu" "$ts")
            echo "$tw $own $(awk -v a="$tu" -v b="$ts" 'BEGIN { printf "%.3f", a + b }')" >>"$WORK/$v.io"
        done
    done
    echo "== syscall tracing cost: io_loop $k write/read pairs on a pipe ($((2 * k)) syscalls), $n runs each, interleaved"
    printf '%-62s %10s %8s %12s %8s %12s\n' variant "target s" "vs bare" "target CPU s" "vs bare" "tool CPU s"
    local bare_w bare_c mean_wall mean_cpu mean_tcpu
    bare_w=$(awk '{ s += $1; n++ } END { printf "%.3f", s / n }' "$WORK/bare.io")
    bare_c=$(awk '{ s += $3; n++ } END { printf "%.3f", s / n }' "$WORK/bare.io")
    local -A label=(
        [bare]="bare"
        [bpftrace]="bpftrace, raw_syscalls script (sum per stack, syscall)"
        [hw_bpf]="hwprof io --engine bpf (sums, fds, histograms)"
    )
    local -A walls=() cpus=()
    for v in "${variants[@]}"; do
        mean_wall=$(awk '{ s += $1; n++ } END { printf "%.3f", s / n }' "$WORK/$v.io")
        mean_cpu=$(awk '{ s += $2; n++ } END { printf "%.3f", s / n }' "$WORK/$v.io")
        mean_tcpu=$(awk '{ s += $3; n++ } END { printf "%.3f", s / n }' "$WORK/$v.io")
        printf '%-62s %10s %8s %12s %8s %12s\n' "${label[$v]}" "$mean_wall" "$(ratio "$mean_wall" "$bare_w")" \
            "$mean_tcpu" "$(ratio "$mean_tcpu" "$bare_c")" "$mean_cpu"
        walls[$v]=$mean_wall
        cpus[$v]=$mean_tcpu
    done
    echo "io tracing, target wall: hwprof bpf $(ratio "${walls[hw_bpf]}" "$bare_w")x bare, bpftrace $(ratio "${walls[bpftrace]}" "$bare_w")x bare, hwprof bpf / bpftrace $(ratio "${walls[hw_bpf]}" "${walls[bpftrace]}")"
    echo "io tracing, target CPU: hwprof bpf / bpftrace $(ratio "${cpus[hw_bpf]}" "${cpus[bpftrace]}"); hwprof io peak RSS $(sort -n "$WORK/hw_bpf.rss" | tail -1) KiB"
}

# samples_in FILE: sample records in a perf.data file (read by hwprof script).
samples_in() {
    "$HWPROF" script -i "$1" --format jsonl 2>/dev/null | grep -c '"type":"sample"' || true
}

# lost_in FILE: samples the kernel reported lost (LOST + LOST_SAMPLES), from hwprof report.
lost_in() {
    "$HWPROF" report -i "$1" --stdio 2>/dev/null | awk '/Total Lost Samples:/ { print $NF; exit }'
}

[[ $# -ge 1 ]] || usage
case "$1" in
    stat) bench_stat ;;
    record) bench_record ;;
    script) bench_script ;;
    export) bench_export ;;
    all)
        bench_stat
        echo
        bench_record
        echo
        bench_script
        echo
        bench_export
        echo
        bench_report
        echo
        bench_flamegraph
        echo
        bench_probe
        echo
        bench_probe_trace
        echo
        bench_offcpu
        echo
        bench_offcpu_trace
        echo
        bench_memory_trace
        echo
        bench_io_trace
        echo
        bench_harness
        echo
        bench_memory
        echo
        bench_dwarf
        ;;
    report) bench_report ;;
    offcpu)
        bench_offcpu
        echo
        bench_offcpu_trace
        ;;
    offcpu-trace) bench_offcpu_trace ;;
    memory-trace) bench_memory_trace ;;
    io-trace) bench_io_trace ;;
    flamegraph) bench_flamegraph ;;
    probe)
        bench_probe
        echo
        bench_probe_trace
        ;;
    probe-trace) bench_probe_trace ;;
    bench) bench_harness ;;
    memory) bench_memory ;;
    dwarf) bench_dwarf ;;
    -h | --help) usage ;;
    *) usage ;;
esac
