# Shared helpers of the CLI test scripts (tests/cli/run_cli.sh,
# run_newuser.sh, run_embedded_plan.sh, tests/buckets/run_buckets.sh), which
# source it first (need_args checks their arguments), then set
#   korch           the korch binary
#   work            the script's work folder (start_work empties it)
#   compare         tensor_compare_tool (for `same`)
#   expect_timeout  seconds after which `expect` counts a command as hung (a
#                   hang guard far above any run time, not a speed check)
# Every check counts: pass adds to $passed, fail to $failed (and says what
# failed, with the start of the last command's stdout and stderr); the
# script's last line reports both and exits 0 only when nothing failed.
# POSIX sh.

# need_args N USAGE COUNT: the script was given N arguments (COUNT is $#),
# else its usage line on stderr and exit 2
need_args() {
    [ "$3" -eq "$1" ] && return 0
    echo "usage: $0 $2" >&2
    exit 2
}

# start_work [DIR...]: an empty $work (and DIRs made), $out and $err the
# files `expect` writes, the counters at zero
start_work() {
    rm -rf "$work"
    mkdir -p "$work" "$@" || exit 2
    out="$work/stdout" err="$work/stderr"
    passed=0 failed=0
}

# private_cache DIR: every optimize from here on profiles and compiles into
# DIR (never ~/.cache), for a test that needs a cache of its own besides
# the suite's per-test one (korch_test_defaults)
private_cache() {
    XDG_CACHE_HOME=$1
    export XDG_CACHE_HOME
}

fail() {
    echo "FAIL  $*"
    echo "      stdout: $(head -c 600 "$out" | tr '\n' '|')"
    echo "      stderr: $(head -c 600 "$err" | tr '\n' '|')"
    failed=$((failed + 1))
}
pass() { passed=$((passed + 1)); }

# expect LABEL EXIT COMMAND...: runs korch COMMAND (stdin empty, output in
# $out and $err) and checks its exit status. A signal (crash, sanitizer
# abort) or a hang ($expect_timeout) always fails.
expect() {
    label=$1 want=$2
    shift 2
    timeout -k 5 "$expect_timeout" "$korch" "$@" </dev/null >"$out" 2>"$err"
    rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "$label: exit $rc, expected $want"
        return 1
    fi
    pass
}

# has LABEL FILE TEXT: FILE contains the fixed string TEXT; lacks: it does not
has() {
    if grep -qF -- "$3" "$2"; then pass; else fail "$1: no \"$3\" in $(basename "$2")"; fi
}
lacks() {
    if grep -qF -- "$3" "$2"; then fail "$1: \"$3\" in $(basename "$2")"; else pass; fi
}
# empty LABEL FILE: FILE is empty; empty_stderr LABEL: $err is
empty() {
    if [ -s "$2" ]; then fail "$1: $(basename "$2") not empty"; else pass; fi
}
empty_stderr() {
    if [ -s "$err" ]; then fail "$1: stderr not empty"; else pass; fi
}

# one_error LABEL TEXT: stderr is exactly one "korch: error:" line containing TEXT
one_error() {
    if [ "$(wc -l <"$err")" -eq 1 ] && head -n 1 "$err" | grep -q '^korch: error: ' && grep -qF -- "$2" "$err"; then
        pass
    else
        fail "$1: expected one \"korch: error: ...$2...\" line"
    fi
}

# same LABEL GOT WANT: tensor files match (conformance tolerance)
same() {
    if "$compare" "$2" "$3" 2>"$work/cmp"; then pass; else fail "$1: $(cat "$work/cmp")"; fi
}
