#!/bin/sh
# Runs the CTest suite in every build directory given (optimised, then
# sanitizers, then the libFuzzer build that scripts/run-fuzz.sh configures)
# and ends with one line CI can read: "N passed, N failed".
set -u
passed=0
failed=0
for dir in "$@"; do
    echo "=== tests in $dir ==="
    log="$dir/ctest.log"
    case "$(basename "$dir")" in
    *fuzz*) mkdir -p "$dir" && scripts/run-fuzz.sh "$dir" 2>&1 | tee "$log" ;;
    *) ( cd "$dir" && ctest --output-on-failure -j 2 ) 2>&1 | tee "$log" ;;
    esac
    p=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\2 \1/p' "$log" | tail -1)
    if [ -z "$p" ]; then
        echo "could not read the CTest summary in $dir"
        failed=$((failed + 1))
        continue
    fi
    total=${p% *}
    bad=${p#* }
    passed=$((passed + total - bad))
    failed=$((failed + bad))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
