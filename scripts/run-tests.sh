#!/bin/sh
# Runs the CTest suite in every build directory given (optimised, then
# sanitizers, then the libFuzzer build that scripts/run-fuzz.sh configures)
# and ends with one line CI can read: "N passed, N failed, N skipped".
#
# Every test runs once. A test that would pass only on a retry is a failing
# test, so nothing here (or anywhere in the suite) retries.
#
# Counts come from CTest's own report, which counts a skipped test (exit 77,
# SKIP_RETURN_CODE) among the passed in "N% tests passed, F tests failed out
# of T": skipped tests are the "(Skipped)" and "(Disabled)" lines of "The
# following tests did not run:" after the last summary, and passed =
# T - F - skipped. A test that could not run (missing executable, failed
# fixture) is in CTest's failed count. scripts/run-fuzz.sh says
# "run-fuzz: all N fuzz tests skipped" when it skips the fuzz suite as a
# whole (KORCH_SKIP_FUZZ=1).
set -u

# ctest_counts LOG: prints "PASSED FAILED SKIPPED", or nothing without a summary
ctest_counts() {
    awk '
    /^run-fuzz: all [0-9]+ fuzz tests skipped/ { whole = $3; found = 1; total = 0; bad = 0; sk = 0; dis = 0; next }
    /[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+/ {
        for (i = 1; i <= NF; i++) {
            if ($i == "failed" && $(i + 1) == "out" && $(i + 2) == "of") total = $(i + 3) + 0
            if ($i ~ /^tests?$/ && $(i + 1) == "failed") bad = $(i - 1) + 0
        }
        found = 1; whole = 0; sk = 0; dis = 0; section = 0; next
    }
    /^The following tests did not run:/ { section = 1; next }
    section && /^[ \t]+[0-9]+ - .* \(Skipped\)$/ { sk++; next }
    section && /^[ \t]+[0-9]+ - .* \(Disabled\)$/ { dis++; next }
    section { section = 0 }
    END { if (found) print total - bad - sk, bad, sk + dis + whole }
    ' "$1"
}

passed=0
failed=0
skipped=0
for dir in "$@"; do
    echo "=== tests in $dir ==="
    log="$dir/ctest.log"
    case "$(basename "$dir")" in
    *fuzz*) mkdir -p "$dir" && scripts/run-fuzz.sh "$dir" 2>&1 | tee "$log" ;;
    *) (cd "$dir" && ctest --output-on-failure -j 2) 2>&1 | tee "$log" ;;
    esac
    counts=$(ctest_counts "$log")
    if [ -z "$counts" ]; then
        echo "could not read the CTest summary in $dir"
        failed=$((failed + 1))
        continue
    fi
    read -r p f s <<EOF
$counts
EOF
    echo "$dir: $p passed, $f failed, $s skipped"
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + s))
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
