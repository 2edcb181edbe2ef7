#!/bin/sh
# ONNX models through `korch optimize --estimate`, `korch export`, the
# generated Makefile (CFLAGS_EXTRA=-Werror) and model_run; outputs compared
# with the reference executor (`korch run MODEL.onnx`, scale-relative 1e-4)
# and with `korch run PLAN` (1e-6). Needs no model zoo: the fixtures of
# tests/api, examples/tiny_net.onnx and the hostile-names model of the
# bad-input corpus. Also checks: only libc/libm/libgomp are linked, names
# with quotes, newlines, "*/", "#include", backslashes and non-ASCII never
# reach the source unescaped and come back byte for byte through the API,
# and a corrupt, truncated or foreign weights file is refused.
#
# usage: run_export_models.sh KORCH COMPARE SOURCE_DIR WORK_DIR
set -u
korch=$1
compare=$2
src=$3
work=$4
rm -rf "$work"
mkdir -p "$work" || exit 2
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-$work/cache}"
failed=0
fail() {
    echo "FAIL $*"
    failed=$((failed + 1))
}

# export_model NAME MODEL INPUTS... : leaves the export in $work/NAME/export
export_model() {
    name=$1
    model=$2
    shift 2
    d="$work/$name"
    mkdir -p "$d"
    echo "=== $name"
    # no wall-clock limit for the solver: the plan cannot depend on the load
    if ! "$korch" optimize "$model" -o "$d/plan" --estimate --time-limit 1000000 -q >"$d/optimize.log" 2>&1; then
        fail "$name: korch optimize: $(tail -3 "$d/optimize.log")"
        return 1
    fi
    if ! "$korch" export "$d/plan" -o "$d/export" >"$d/export.log" 2>&1; then
        fail "$name: korch export: $(tail -3 "$d/export.log")"
        return 1
    fi
    head -1 "$d/export.log"
    if ! make -s -C "$d/export" CFLAGS_EXTRA=-Werror >"$d/build.log" 2>&1; then
        fail "$name: the export does not build with -Werror: $(head -5 "$d/build.log")"
        return 1
    fi
    # run-time dependencies: libc (and its loader, for thread-local error
    # messages), libm (+ libmvec), libgomp, and libdnnl only for oneDNN
    # kernels; never korch
    dnnl=$(sed -n 's/.* \([0-9]*\) oneDNN;.*/\1/p' "$d/export.log")
    for lib in $(readelf -d "$d/export/libmodel.so" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
        case "$lib" in
            libc.so.*|libm.so.*|libmvec.so.*|libgomp.so.*|ld-linux*.so.*) ;;
            libdnnl.so.*) [ "${dnnl:-0}" -gt 0 ] || fail "$name: libmodel.so needs $lib without oneDNN kernels" ;;
            *) fail "$name: libmodel.so needs $lib" ;;
        esac
    done
    for lib in $(readelf -d "$d/export/model_run" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
        case "$lib" in
            libmodel.so|libc.so.*|libm.so.*|libgomp.so.*) ;;
            *) fail "$name: model_run needs $lib" ;;
        esac
    done
    # outputs: exported vs reference executor vs korch run PLAN
    mkdir -p "$d/out" "$d/ref" "$d/plan_out"
    if ! "$d/export/model_run" "$@" --output-dir "$d/out" >"$d/run.log" 2>&1; then
        fail "$name: model_run: $(tail -3 "$d/run.log")"
        return 1
    fi
    if ! "$korch" run "$model" "$@" --output-dir "$d/ref" >/dev/null 2>"$d/ref.log" ||
        ! "$korch" run "$d/plan" "$@" --output-dir "$d/plan_out" >/dev/null 2>>"$d/ref.log"; then
        fail "$name: korch run: $(tail -3 "$d/ref.log")"
        return 1
    fi
    n=0
    for want in "$d/ref"/*.npy "$d/ref"/.[!.]*.npy "$d/ref"/..?*.npy; do
        [ -f "$want" ] || continue
        got="$d/out/$(basename "$want")"
        n=$((n + 1))
        "$compare" "$got" "$want" 1e-4 2>>"$d/compare.log" || fail "$name: $(basename "$want") differs from the reference executor: $(tail -1 "$d/compare.log")"
        "$compare" "$got" "$d/plan_out/$(basename "$want")" 1e-6 2>>"$d/compare.log" || fail "$name: $(basename "$want") differs from korch run PLAN: $(tail -1 "$d/compare.log")"
    done
    [ "$n" -gt 0 ] || fail "$name: no outputs compared"
    echo "$name: $n output(s) match"
    return 0
}

fx="$src/tests/api/fixtures"
export_model small_net "$fx/small_net.onnx" --input "x=$fx/small_net.x.npy"
export_model gather_net "$fx/gather_net.onnx" --input "ids=$fx/gather_net.ids.npy"
# tiny_net: no input file; --bench 1 makes both sides use the same seeded data
export_model tiny_net "$src/examples/tiny_net.onnx" --bench 1
# tiny_net in QDQ form: with VNNI its plan has int8 convolutions, some with an
# 8-bit destination, which the export must recover and compute alike
if export_model tiny_net_qdq "$src/tests/verify/fixtures/tiny_net_qdq.onnx" --bench 1 &&
    grep -q 'avx512_vnni\|avx_vnni' /proc/cpuinfo; then
    grep -q '^/\* kernel [0-9]*: conv.* u8.*->u8' "$work/tiny_net_qdq/export/model.c" ||
        fail "tiny_net_qdq: no int8 convolution with an 8-bit destination in the export on a VNNI CPU"
fi
# hostile names: a bare input file binds the (unnameable) input
hostile="$src/tests/badinput/corpus/hostile_names"
if export_model hostile "$hostile.onnx" --input "$hostile.x.npy"; then
    e="$work/hostile/export"
    # ASCII only (printable, tab, newline): non-ASCII names are escaped
    if LC_ALL=C grep -n '[^ -~	]' "$e/model.c" "$e/model.h" >"$work/hostile/nonascii.txt"; then
        fail "hostile: bytes outside printable ASCII in the source: $(head -3 "$work/hostile/nonascii.txt")"
    fi
    # no name fragment can start a line (names never hold a raw newline)
    if grep -n '^newline\|^\*/#include\|^\*/ #include\|^#include "evil\|^#define W\|^#include <x>' "$e/model.c" "$e/model.h"; then
        fail "hostile: a name fragment starts a source line"
    fi
    grep -q 'evil' "$e/model.h" || fail "hostile: the output name is missing from model.h"
    # names come back byte for byte through the generated API
    cc -std=c11 -Wall -Wextra -Werror -I"$e" "$src/tests/export/print_names.c" -o "$work/hostile/print_names" \
        -L"$e" -lmodel -Wl,-rpath,"$e" || fail "hostile: print_names does not build"
    "$work/hostile/print_names" "$e/model.weights" >"$work/hostile/names.txt" || fail "hostile: print_names failed"
    # the fixture's names (hex of the UTF-8 bytes in hostile_names.onnx)
    cat >"$work/hostile/names.want" <<'NAMES'
in 78202271756f746564220a6e65776c696e65202a2f2023696e636c756465203c737464696f2e683e205c6261636b5c736c61736820c3bc6ec3af63c3b664c3a9
out 2e2e2f7920226f7574220a2a2f23696e636c75646520226576696c2e68225c20c3a9
NAMES
    cmp -s "$work/hostile/names.txt" "$work/hostile/names.want" || fail "hostile: names differ: $(cat "$work/hostile/names.txt")"
    # the output file name is korch run's
    [ -f "$work/hostile/out/.._y__out_____include__evil.h_____.npy" ] || fail "hostile: output file name"
fi

# clang builds the same sources cleanly (with its own OpenMP runtime;
# -Wno-pass-failed: clang reports `omp simd` loops it could not vectorise,
# an optimisation remark, not a problem of the code)
if command -v clang >/dev/null; then
    for name in tiny_net gather_net hostile; do
        e="$work/$name/export"
        [ -f "$e/model.c" ] || continue
        cp -r "$e" "$work/$name/clang"
        make -s -C "$work/$name/clang" clean >/dev/null
        if ! make -s -C "$work/$name/clang" CC=clang CFLAGS_EXTRA="-Werror -Wno-pass-failed" >"$work/$name/clang.log" 2>&1; then
            fail "$name: clang -Werror: $(head -5 "$work/$name/clang.log")"
        fi
    done
fi

# the weights file: moved with the binaries; corrupt, truncated, foreign
e="$work/small_net/export"
if [ -x "$e/model_run" ]; then
    cp -r "$e" "$work/moved"
    "$work/moved/model_run" --input "x=$fx/small_net.x.npy" >/dev/null 2>&1 || fail "weights: a moved export does not run"
    w="$work/moved/model.weights"
    cp "$e/model.weights" "$w"
    printf 'X' | dd of="$w" bs=1 seek=100 conv=notrunc 2>/dev/null
    "$work/moved/model_run" --input "x=$fx/small_net.x.npy" 2>"$work/err.txt" && fail "weights: a corrupt file was accepted"
    grep -q "corrupt" "$work/err.txt" || fail "weights: corruption message: $(cat "$work/err.txt")"
    head -c 200 "$e/model.weights" >"$w"
    "$work/moved/model_run" --input "x=$fx/small_net.x.npy" 2>"$work/err.txt" && fail "weights: a truncated file was accepted"
    grep -q "truncated" "$work/err.txt" || fail "weights: truncation message: $(cat "$work/err.txt")"
    cp "$work/gather_net/export/model.weights" "$w"
    "$work/moved/model_run" --input "x=$fx/small_net.x.npy" 2>"$work/err.txt" && fail "weights: another model's file was accepted"
    grep -q "another model" "$work/err.txt" || fail "weights: foreign file message: $(cat "$work/err.txt")"
    rm -f "$w"
    "$work/moved/model_run" --input "x=$fx/small_net.x.npy" 2>"$work/err.txt" && fail "weights: a missing file was accepted"
    grep -q "cannot open" "$work/err.txt" || fail "weights: missing file message: $(cat "$work/err.txt")"
    # --bench prints the contract's last line
    "$e/model_run" --bench 3 2>/dev/null | tail -1 | grep -q '^median_ms=[0-9.]* min_ms=[0-9.]* max_ms=[0-9.]* runs=3$' ||
        fail "model_run --bench: last line"
fi
# a plan that cannot be exported is refused with the kernel named (not a crash)
"$korch" export "$fx/small_net.onnx" -o "$work/not_a_plan" >/dev/null 2>"$work/err.txt" && fail "export accepted an ONNX file as a plan"
grep -q "not a korch plan" "$work/err.txt" || fail "export of a non-plan: $(cat "$work/err.txt")"

echo "run_export_models: $failed failure(s)"
[ "$failed" -eq 0 ]
