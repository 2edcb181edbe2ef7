#!/bin/sh
# libkorch.so exports exactly the public API: the functions include/korch.h
# marks KORCH_API, no more (internal symbols leaking) and no fewer.
#   check_exports.sh SOURCE_DIR LIBRARY
set -u
header=${1:?usage: check_exports.sh SOURCE_DIR LIBRARY}/include/korch.h
lib=${2:?usage: check_exports.sh SOURCE_DIR LIBRARY}
command -v nm >/dev/null || { echo "nm not found: skipped"; exit 77; }
[ -f "$lib" ] || { echo "no library at $lib"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -o '^KORCH_API [^(]*(' "$header" | sed 's/($//; s/.*[ *]//' | sort -u >"$tmp/api"
# defined dynamic symbols of any kind (functions, data), versioned or not
nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u >"$tmp/exported"
n_api=$(wc -l <"$tmp/api")
[ "$n_api" -gt 0 ] || { echo "no KORCH_API declarations found in $header"; exit 1; }
extra=$(comm -13 "$tmp/api" "$tmp/exported")
missing=$(comm -23 "$tmp/api" "$tmp/exported")
[ -z "$extra" ] || { echo "exported but not public API ($(echo "$extra" | wc -l)):"; echo "$extra" | head -40; }
[ -z "$missing" ] || { echo "public API not exported:"; echo "$missing"; }
[ -z "$extra$missing" ] || exit 1
echo "libkorch.so exports exactly the $n_api functions of include/korch.h"
