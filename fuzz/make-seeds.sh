#!/bin/sh
# Remakes fuzz/seeds: tiny recordings made by hwprof itself (never copies of the
# fixtures in ../shared/fixtures, which the fuzzers read in place). Run from anywhere:
#   sh fuzz/make-seeds.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cargo build -q --manifest-path "$root/Cargo.toml" --bin hwprof
hw="${CARGO_TARGET_DIR:-$root/target}/debug/hwprof"
for w in spin sleeper; do
	cc -O1 -g -fno-omit-frame-pointer -no-pie -o "$tmp/$w" "$root/tests/workloads/$w.c"
done
cd "$tmp"
"$hw" record -q -e task-clock -c 2000000 -g -o task-clock-g -- ./spin 20
"$hw" record -q -e cpu-clock -c 4000000 --call-graph dwarf,512 -o dwarf -- ./spin 20
"$hw" record -q -e sched:sched_switch,sched:sched_wakeup -g -o tracepoints -- ./sleeper 3 1
"$hw" record -q -e cpu-clock -c 2000000 -d --weight --switch-events -o d-weight-switch -- ./sleeper 3 1
for f in task-clock-g dwarf tracepoints d-weight-switch; do
	cp "$f" "$here/seeds/hwprof-$f.perf"
done
ls -l "$here/seeds"
