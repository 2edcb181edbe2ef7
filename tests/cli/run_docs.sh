#!/bin/sh
# Every command korch lists, and every option its --help prints, is
# documented in docs/cli.md; every command documented there exists.
#   run_docs.sh KORCH docs/cli.md
set -u
korch=$1 doc=$2
fail=0
commands=$("$korch" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{on=0}')
[ -n "$commands" ] || { echo "FAIL: 'korch --help' lists no commands"; exit 1; }
for c in $commands; do
    if ! grep -q "^## korch $c\b" "$doc"; then
        echo "FAIL: command '$c' has no '## korch $c' section in $doc"; fail=1
    fi
    help=$("$korch" "$c" --help) || { echo "FAIL: 'korch $c --help' exits non-zero"; fail=1; continue; }
    for opt in $(printf '%s\n' "$help" | grep -o -- '--[a-z][a-z-]*' | sort -u); do
        if ! grep -q -- "\`$opt\b" "$doc"; then
            echo "FAIL: option $opt of 'korch $c' is not documented in $doc"; fail=1
        fi
    done
done
for c in $(sed -n 's/^## korch \([a-z]*\).*/\1/p' "$doc"); do
    case " $(echo $commands) " in
        *" $c "*) ;;
        *) echo "FAIL: $doc documents 'korch $c', which korch does not list"; fail=1 ;;
    esac
done
[ $fail = 0 ] && echo "docs/cli.md covers $(echo $commands | wc -w) commands and their options"
exit $fail
