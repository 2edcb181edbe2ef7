#!/bin/sh
# Installs the build into a staging DESTDIR with another prefix, builds
# tests/api/install_app.c against the installed copy via pkg-config (header,
# library and korch.pc from the staging tree only), and runs it on a fixture
# model. Exit 77 (skipped) without pkg-config.
#
# usage: install_pkgconfig.sh SOURCE_DIR BUILD_DIR WORK_DIR [CC]
set -u
src=$1
build=$2
work=$3
cc=${4:-cc}
command -v pkg-config >/dev/null || { echo "no pkg-config: skipped"; exit 77; }
rm -rf "$work"
mkdir -p "$work" || exit 2
stage="$work/stage"
prefix=/opt/korch-test
DESTDIR="$stage" cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
pc=$(find "$stage" -name korch.pc | head -1)
[ -n "$pc" ] || { echo "korch.pc was not installed"; exit 1; }
[ -f "$stage$prefix/include/korch.h" ] || { echo "korch.h was not installed under $stage$prefix/include"; exit 1; }
export PKG_CONFIG_PATH="$(dirname "$pc")"
flags=$(pkg-config --cflags --libs korch) || exit 1
echo "pkg-config --cflags --libs korch: $flags"
case "$flags" in
    *"$stage$prefix"*) ;;
    *) echo "the flags do not point into the staging tree"; exit 1 ;;
esac
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Wextra -Werror "$src/tests/api/install_app.c" $flags -o "$work/app" || exit 1
libdir=$(pkg-config --variable=libdir korch)
LD_LIBRARY_PATH="$libdir" ldd "$work/app" | grep libkorch
case "$(LD_LIBRARY_PATH="$libdir" ldd "$work/app" | grep libkorch)" in
    *"$stage"*) ;;
    *) echo "the program does not load the installed libkorch"; exit 1 ;;
esac
LD_LIBRARY_PATH="$libdir" "$work/app" "$src/tests/api/fixtures/small_net.onnx" || exit 1
"$stage$prefix/bin/korch" --version || exit 1
