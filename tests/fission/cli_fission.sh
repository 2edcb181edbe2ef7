#!/bin/sh
# `korch fission` end to end: usage errors, bad models, the bad-input corpus
# (no crash), --stats, and -o OUT.onnx run by `korch run` against the stored
# outputs of ONNX backend tests (docs/fission.md).
#
# usage: cli_fission.sh KORCH TENSOR_COMPARE_TOOL TESTDATA_DIR BADINPUT_CORPUS WORK_DIR
set -u
if [ $# -ne 5 ]; then
    echo "usage: $0 KORCH TENSOR_COMPARE_TOOL TESTDATA_DIR BADINPUT_CORPUS WORK_DIR" >&2
    exit 2
fi
korch=$1
compare=$2
data=$3
corpus=$4
work=$5
[ -d "$data/node" ] || { echo "no ONNX backend tests in $data (libonnx-testdata): skipped"; exit 77; }
rm -rf "$work"
mkdir -p "$work" || exit 2
passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

# exit status of a command, with stderr kept for inspection
status_of() { "$@" >"$work/stdout" 2>"$work/stderr"; echo $?; }

[ "$(status_of "$korch" fission --help)" = 0 ] && grep -q "usage: korch fission" "$work/stdout" && pass || fail "--help"
[ "$(status_of "$korch" fission)" = 2 ] && pass || fail "no model is a usage error"
[ "$(status_of "$korch" fission x.onnx --bogus)" = 2 ] && pass || fail "unknown option is a usage error"
[ "$(status_of "$korch" fission "$work/missing.onnx")" = 1 ] && grep -q "^korch: error: " "$work/stderr" &&
    [ "$(wc -l <"$work/stderr")" = 1 ] && pass || fail "a missing model: exit 1 with one error line"

# the bad-input corpus: a clear error or a result, never a crash or a hang
if [ ! -d "$corpus" ]; then
    fail "the bad-input corpus $corpus is missing"
else
    for m in "$corpus"/*.onnx; do
        s=$(status_of timeout 300 "$korch" fission "$m" -o "$work/bad.onnx")
        case $s in
        0 | 1 | 2) pass ;;
        *) fail "korch fission $(basename "$m") exited with $s: $(head -c 300 "$work/stderr")" ;;
        esac
    done
fi

# backend tests: fission -o, run the written model, compare with the stored outputs
# (no run-time integer or scale inputs; the first output is compared)
for t in test_softmax_axis_0 test_logsoftmax_axis_1 test_gemm_all_attributes \
    test_conv_with_strides_and_asymmetric_padding test_convtranspose_pads test_maxpool_2d_ceil \
    test_averagepool_2d_pads_count_include_pad \
    test_depthtospace_crd_mode_example test_instancenorm_example test_batchnorm_example test_reduce_log_sum_exp_default_axes_keepdims_example \
    test_hardswish test_softplus test_transpose_all_permutations_3 test_gather_0 test_matmul_2d test_globalaveragepool \
    test_maxpool_with_argmax_2d_precomputed_strides; do
    dir="$data/node/$t"
    [ -f "$dir/model.onnx" ] || { fail "missing test data $dir"; continue; }
    ins=""
    for i in "$dir"/test_data_set_0/input_*.pb; do ins="$ins --input $i"; done
    out="$work/$t"
    mkdir -p "$out/orig" "$out/fission"
    # shellcheck disable=SC2086
    if [ "$(status_of "$korch" fission "$dir/model.onnx" -o "$out/model.onnx")" != 0 ]; then
        fail "$t: korch fission: $(cat "$work/stderr")"
        continue
    fi
    # shellcheck disable=SC2086
    if [ "$(status_of "$korch" run "$out/model.onnx" $ins --output-dir "$out/fission")" != 0 ]; then
        fail "$t: korch run on the fissioned model: $(cat "$work/stderr")"
        continue
    fi
    got=$(ls "$out/fission"/*.npy | head -1)
    if "$compare" "$got" "$dir/test_data_set_0/output_0.pb" 2>"$work/stderr"; then pass; else fail "$t: $(cat "$work/stderr")"; fi
done

# --stats names every section
m="$data/node/test_instancenorm_example/model.onnx"
if [ "$(status_of "$korch" fission "$m" --stats)" = 0 ]; then
    for section in "primitives per kind" "primitives per operator" "clean-up passes" "opaque primitives: 0" \
        "InstanceNormalization"; do
        grep -q "$section" "$work/stdout" && pass || fail "--stats lacks \"$section\""
    done
else
    fail "--stats: $(cat "$work/stderr")"
fi

echo "cli_fission: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
