#!/bin/sh
# Rebuilds bpf/objects/*.bpf.o from bpf/src/c/*.bpf.c, reproducibly:
#   bpf/build.sh           rebuild the committed objects in place
#   bpf/build.sh --check   rebuild into a temporary folder and fail, naming the object,
#                          if a committed object differs (CI runs this)
# Needs clang (and llvm-strip) and libbpf's headers (Debian: clang llvm libbpf-dev).
#
# Reproducible: clang runs from bpf/ with relative paths and -fdebug-compilation-dir=.
# (no absolute path in the BTF line info), and llvm-strip -g drops the DWARF (clang's
# version string, include paths) but keeps .BTF and .BTF.ext, which the loader needs
# for SEC(".maps") maps and globals.
set -eu
cd "$(dirname "$0")"
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: bpf/build.sh [--check]" >&2; exit 2 ;;
esac
CLANG=${CLANG:-clang}
STRIP=${LLVM_STRIP:-llvm-strip}
for tool in "$CLANG" "$STRIP"; do
  command -v "$tool" >/dev/null 2>&1 || { echo "bpf/build.sh: $tool not found (Debian: apt-get install clang llvm libbpf-dev)" >&2; exit 1; }
done
ARCH_INC=/usr/include/$(uname -m)-linux-gnu
CFLAGS="-O2 -g -target bpf -I src/c -I $ARCH_INC -fdebug-compilation-dir=. -Wall -Werror"
if [ $check = 1 ]; then
  out=$(mktemp -d "${TMPDIR:-/tmp}/hwprof-bpf-check.XXXXXX")
  trap 'rm -rf "$out"' EXIT
else
  out=objects
fi
mkdir -p "$out"
for src in src/c/*.bpf.c; do
  name=$(basename "$src" .c)
  "$CLANG" $CFLAGS -c "$src" -o "$out/$name.o"
  "$STRIP" -g "$out/$name.o"
done
if [ $check = 1 ]; then
  bad=0
  for o in "$out"/*.bpf.o; do
    name=$(basename "$o")
    if ! cmp -s "$o" "objects/$name"; then
      echo "bpf/build.sh --check: bpf/objects/$name differs from a rebuild of bpf/src/c/${name%.o}.c: run bpf/build.sh and commit it" >&2
      bad=1
    fi
  done
  for o in objects/*.bpf.o; do
    [ -e "$out/$(basename "$o")" ] || { echo "bpf/build.sh --check: bpf/$o has no source in bpf/src/c" >&2; bad=1; }
  done
  exit $bad
fi
