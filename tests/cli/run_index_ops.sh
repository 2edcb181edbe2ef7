#!/bin/sh
# CLI test: operators that address by run-time values or sort (GatherElements,
# GatherND, ScatterND, Scatter, TopK; opaque primitives run by the reference
# executor, docs/fission.md), Trilu / EyeLike (a constant mask and a folded
# constant) and Einsum (sums, transposes and a MatMul in fission), on the
# index_ops and einsum_forms models of the bad-input corpus, whose
# outputs numpy computed (scripts/gen-bad-models.py). Each model: the
# reference run and the optimised plan give the stored outputs; `korch
# fission` lists the opaque primitives by operator and fuses Trilu; `korch
# export` of a plan with an opaque TopK is refused with a named error.
# usage: run_index_ops.sh KORCH CORPUS_DIR TENSOR_COMPARE_TOOL WORK_DIR
set -u
. "$(dirname "$0")/lib.sh"
need_args 4 "KORCH CORPUS_DIR TENSOR_COMPARE_TOOL WORK_DIR" $#
korch=$1 corpus=$2 compare=$3 work=$4
expect_timeout=900
start_work
private_cache "$work/cache"

# check_model NAME INPUTS... -- OUTPUTS...: reference run and plan, every
# output against the corpus' numpy result
check_model() {
    name=$1
    shift
    ins=""
    while [ "$1" != "--" ]; do ins="$ins --input $corpus/$name.$1.npy"; shift; done
    shift
    # shellcheck disable=SC2086
    expect "$name: reference run" 0 run "$corpus/$name.onnx" $ins --output-dir "$work/$name.ref"
    # shellcheck disable=SC2086
    expect "$name: optimize" 0 optimize "$corpus/$name.onnx" -o "$work/$name.plan" --db "$work/profile.db" \
        --threads 1 -q $ins
    # shellcheck disable=SC2086
    expect "$name: run plan" 0 run "$work/$name.plan" $ins --output-dir "$work/$name.plan.out" --threads 1
    for o in "$@"; do
        same "$name: reference $o" "$work/$name.ref/$o.npy" "$corpus/$name.$o.npy"
        same "$name: plan $o" "$work/$name.plan.out/$o.npy" "$corpus/$name.$o.npy"
    done
}

check_model index_ops x idx upd -- y1 y2 y3 y4 y5 y6 y7
check_model index_ops_opset9 a sidx u -- v i sc
check_model einsum_forms q k a m a3 v u s -- y1 y2 y3 y4 y5 y6 y7 y8 y9 y10 y11

expect "fission index_ops" 0 fission "$corpus/index_ops.onnx"
for op in TopK GatherElements GatherND ScatterND; do has "fission: opaque $op" "$out" "$op"; done
lacks "fission: Trilu with a constant k is a mask, not opaque" "$out" "Trilu \""
expect "fission index_ops_opset9" 0 fission "$corpus/index_ops_opset9.onnx"
has "fission: opaque Scatter" "$out" "Scatter"

expect "fission einsum_forms" 0 fission "$corpus/einsum_forms.onnx"
has "fission: Einsum's products are matmuls" "$out" "linear            7 ->"
has "fission: a diagonal stays whole" "$out" 'Einsum "einsum_y9": Einsum of a diagonal'
has "fission: three operands stay whole" "$out" 'Einsum "einsum_y10": Einsum of more than two operands'

expect "export of a plan with an opaque TopK" 1 export "$work/index_ops.plan" -o "$work/export"
one_error "export names the operator and its node" "opaque.TopK, node \"topk\""

echo "index ops: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
