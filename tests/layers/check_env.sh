#!/bin/sh
# The library takes options, not the environment (docs/architecture.md):
# no file under src/ outside src/cli calls getenv (or secure_getenv) except
# for the (file, variable) pairs of tests/layers/env_allowed.txt, each there
# with its reason, and always with a string literal, so this check sees the
# name. Prints every violation; exit 1 if there is one.
#   check_env.sh SOURCE_DIR
set -u
src=${1:?usage: check_env.sh SOURCE_DIR}/src
allowed=$(dirname "$0")/env_allowed.txt
bad=$(mktemp)
seen=$(mktemp)
trap 'rm -f "$bad" "$seen"' EXIT
for f in $(cd "$src" && find . -name '*.[ch]' ! -path './cli/*' | sed 's#^\./##' | sort); do
    # every getenv( call on its own line, with what follows the parenthesis
    grep -n 'getenv[[:space:]]*(' "$src/$f" | while IFS= read -r line; do
        no=${line%%:*}
        text=${line#*:}
        # each call on the line: getenv("NAME") gives NAME, anything else is opaque
        echo "$text" | grep -o 'getenv[[:space:]]*([^)]*)' | while IFS= read -r call; do
            name=$(echo "$call" | sed -n 's/^getenv[[:space:]]*([[:space:]]*"\([A-Za-z_][A-Za-z0-9_]*\)"[[:space:]]*)$/\1/p')
            if [ -z "$name" ]; then
                echo "src/$f:$no: $call: the library reads the environment only with a literal name (and only the names of tests/layers/env_allowed.txt)"
                echo x >>"$bad"
            elif grep -v '^#' "$allowed" | grep -qx "$f $name"; then
                echo "$f $name" >>"$seen"
            else
                echo "src/$f:$no: reads \$$name: the library takes settings through options; read it in src/cli/cli_env.c and pass it down (or list it in tests/layers/env_allowed.txt with the reason)"
                echo x >>"$bad"
            fi
        done
    done
done
grep -v '^#' "$allowed" | grep -v '^[[:space:]]*$' | while IFS= read -r e; do
    grep -qx "$e" "$seen" || { echo "tests/layers/env_allowed.txt: \"$e\" no longer occurs: remove it"; echo x >>"$bad"; }
done
n=$(wc -l <"$bad")
if [ "$n" -ne 0 ]; then
    echo "environment: $n violation(s) (tests/layers/env_allowed.txt, docs/architecture.md)"
    exit 1
fi
echo "environment: outside src/cli only the $(sort -u "$seen" | wc -l) allowed reads of tests/layers/env_allowed.txt"
