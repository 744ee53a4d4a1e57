#!/usr/bin/env bash
# copy-spy.sh -- runs a command with scripts/copy-spy.c preloaded: each process
# prints, by call site, its memcpy calls of more than 2 KiB and how many of them
# had the destination 1-63 bytes past a page from the source (glibc's rep movsb
# is 15-25x slower there on AMD Zen; ramp's own copies avoid it: src/sys/copy.rs).
#
#   bash scripts/copy-spy.sh COMMAND [ARGS...]
#
# e.g. bash scripts/copy-spy.sh target/release/ramp bench --runs 1
set -euo pipefail
[ $# -gt 0 ] || { sed -n '2,9p' "$0"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"${CC:-cc}" -O2 -Wall -Wextra -Werror -shared -fPIC -o "$tmp/copy-spy.so" \
  "$(dirname "$0")/copy-spy.c" -ldl
LD_PRELOAD="$tmp/copy-spy.so${LD_PRELOAD:+:$LD_PRELOAD}" "$@"
