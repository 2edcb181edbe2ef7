#!/bin/sh
# Runs `korch check` and `korch run` on every entry of the bad-input corpus
# (tests/badinput/corpus/MANIFEST.tsv, made by scripts/gen-bad-models.py) and
# asserts the bad-input policy of docs/bad-input.md:
#   - the exit status is the one the manifest gives (1 for a bad model);
#   - on failure, stderr is exactly one line, starting with "korch: error: "
#     and containing the manifest's substring;
#   - on success, stderr is empty and every output matches the stored numpy
#     result (tensor_compare_tool), with the file name korch must write;
#   - no crash (no exit by signal, which includes sanitizer aborts) and no
#     hang (each command is killed after $KORCH_BADINPUT_TIMEOUT seconds,
#     default 300: a hang guard only, far above any run time under ASan on
#     a loaded machine, so that no verdict depends on the machine's speed).
# "needs_op" in the manifest names the operator an entry exercises; korch
# answering "unsupported operator <op>" for it is a failure.
#
# usage: run_badinput.sh KORCH CORPUS_DIR TENSOR_COMPARE_TOOL WORK_DIR
set -u
if [ $# -ne 4 ]; then
    echo "usage: $0 KORCH CORPUS_DIR TENSOR_COMPARE_TOOL WORK_DIR" >&2
    exit 2
fi
korch=$1
corpus=$2
compare=$3
work=$4
timeout_s=${KORCH_BADINPUT_TIMEOUT:-300}
rm -rf "$work"
mkdir -p "$work" || exit 2

ok=0
failed=0
tab=$(printf '\t')

fail() {
    echo "FAIL    $*"
    failed=$((failed + 1))
}

# True when file $1 is exactly one line ending in a newline.
one_line() {
    [ "$(wc -l <"$1")" -eq 1 ] && [ "$(tail -c 1 "$1" | od -An -c | tr -d ' ')" = '\n' ]
}

# check_case LABEL EXPECTED_EXIT NEEDS_OP SUBSTRING -- COMMAND...
# Runs COMMAND with a time limit and checks exit status and stderr.
# Returns 0 when the case passed and the command succeeded (outputs may then
# be compared), 1 otherwise.
check_case() {
    label=$1 expect=$2 needs=$3 substr=$4
    shift 5
    timeout -k 5 "$timeout_s" "$@" >"$work/stdout" 2>"$work/stderr"
    rc=$?
    first=$(head -n 1 "$work/stderr" | cut -c 1-300)
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        fail "$label: no answer within $timeout_s s"
        return 1
    fi
    if [ "$rc" -gt 128 ]; then
        fail "$label: killed by signal $((rc - 128)) (crash or sanitizer abort); stderr:"
        sed 's/^/        /' "$work/stderr" | head -n 40
        return 1
    fi
    if [ "$needs" != "-" ] && [ "$rc" -eq 1 ] && one_line "$work/stderr" &&
        grep -q "^korch: error: unsupported operator $needs " "$work/stderr"; then
        # every operator the corpus needs exists now: losing one is a regression
        fail "$label: operator $needs is reported unsupported"
        return 1
    fi
    if [ "$expect" -eq 0 ]; then
        if [ "$rc" -ne 0 ] || [ -s "$work/stderr" ]; then
            fail "$label: expected success, got exit $rc; stderr: $first"
            return 1
        fi
        return 0
    fi
    if [ "$rc" -ne "$expect" ]; then
        fail "$label: exit $rc, expected $expect; stderr: $first"
    elif ! one_line "$work/stderr"; then
        fail "$label: stderr is not exactly one line:"
        sed 's/^/        /' "$work/stderr" | head -n 20
    elif case "$first" in "korch: error: "*) false ;; *) true ;; esac then
        fail "$label: stderr does not start with \"korch: error: \": $first"
    elif ! grep -qF -- "$substr" "$work/stderr"; then
        fail "$label: error lacks \"$substr\": $first"
    else
        echo "ok      $label: $first"
        ok=$((ok + 1))
    fi
    return 1
}

# compare_outputs LABEL OUT_DIR "got:want got:want..."
compare_outputs() {
    label=$1 dir=$2 pairs=$3 n=0 good=1
    for pair in $pairs; do
        n=$((n + 1))
        got=${pair%%:*} want=${pair#*:}
        if [ ! -f "$dir/$got" ]; then
            fail "$label: korch did not write $got (written: $(ls "$dir" | tr '\n' ' '))"
            good=0
        elif ! "$compare" "$dir/$got" "$corpus/$want" 2>"$work/cmp"; then
            fail "$label: $(cat "$work/cmp")"
            good=0
        fi
    done
    written=$(ls -A "$dir" | wc -l)
    if [ "$good" -eq 1 ] && [ "$written" -ne "$n" ]; then
        fail "$label: wrote $written files, expected $n: $(ls -A "$dir" | tr '\n' ' ')"
        good=0
    fi
    if [ "$good" -eq 1 ]; then
        echo "ok      $label: $n outputs match"
        ok=$((ok + 1))
    fi
}

entries=0
while IFS=$tab read -r file check_exit run_exit substr needs inputs outputs description; do
    case "$file" in "#"* | "") continue ;; esac
    entries=$((entries + 1))
    model="$corpus/$file"
    if check_case "check $file" "$check_exit" "$needs" "$substr" -- "$korch" check "$model"; then
        echo "ok      check $file"
        ok=$((ok + 1))
    fi
    [ "$run_exit" = "-" ] && continue
    out_dir="$work/out-$file"
    mkdir -p "$out_dir"
    if [ "$inputs" = "-" ]; then
        # no inputs given: korch fills them with random data (bad models fail before that)
        set -- --bench 1
    else
        set --
        for f in $inputs; do set -- "$@" --input "$corpus/$f"; done
    fi
    if check_case "run $file" "$run_exit" "$needs" "$substr" -- "$korch" run "$model" "$@" --output-dir "$out_dir"; then
        if [ "$outputs" = "-" ]; then
            echo "ok      run $file"
            ok=$((ok + 1))
        else
            compare_outputs "run $file" "$out_dir" "$outputs"
        fi
    fi
done <"$corpus/MANIFEST.tsv"

echo "badinput: $entries corpus entries: $ok ok, $failed failed"
[ "$entries" -ge 25 ] || { echo "badinput: the manifest lists only $entries entries"; exit 1; }
[ "$failed" -eq 0 ]
