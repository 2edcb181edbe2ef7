#!/bin/sh
# The layer order (tests/layers/layers.txt, docs/architecture.md): no file
# under src/ includes a header of a later layer, backends do not include one
# another, and every folder of src/ is in the table (a new folder must be
# placed). Prints every violation; exit 1 if there is one.
#   check_layers.sh SOURCE_DIR
set -u
src=${1:?usage: check_layers.sh SOURCE_DIR}/src
table=$(dirname "$0")/layers.txt
exceptions=$(dirname "$0")/exceptions.txt
is_exception() { # file header
    grep -v '^#' "$exceptions" 2>/dev/null | grep -qx "$1 $2"
}
rank_of() { # folder -> its line number among the table's layers, or nothing
    awk -v f="$1" '!/^#/ && NF { n++; for (i = 1; i <= NF; i++) if ($i == f) print n }' "$table"
}
tmp=$(mktemp)
seen=$(mktemp)
trap 'rm -f "$tmp" "$seen"' EXIT
for dir in "$src"/*/; do
    d=$(basename "$dir")
    [ -n "$(rank_of "$d")" ] || { echo "src/$d/: not in tests/layers/layers.txt (place the new folder in the layer order)"; echo x >>"$tmp"; }
done
for f in $(cd "$src" && find . -name '*.[ch]' | sed 's#^\./##' | sort); do
    d=${f%%/*}
    r=$(rank_of "$d")
    [ -n "$r" ] || continue
    sub=
    case "$f" in backend/*/*) sub=$(echo "$f" | cut -d/ -f2) ;; backend/*) sub=. ;; esac
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]*/' "$src/$f" | while IFS= read -r line; do
        inc=$(echo "$line" | sed 's/^[^"]*"//; s/".*//')
        t=${inc%%/*}
        tr=$(rank_of "$t")
        if [ -z "$tr" ]; then
            echo "src/$f: includes $inc, whose folder is not in the layer table"
            echo x >>"$tmp"
        elif [ "$tr" -gt "$r" ]; then
            if is_exception "$f" "$inc"; then
                echo "known: src/$f includes $inc (tests/layers/exceptions.txt)"
                echo "$f $inc" >>"$seen"
            else
                echo "src/$f:${line%%:*}: $d/ (layer $r) includes $inc ($t/, layer $tr): a later layer"
                echo x >>"$tmp"
            fi
        elif [ -n "$sub" ] && [ "$t" = backend ]; then
            other=$(echo "$inc" | cut -d/ -f2)
            case "$inc" in backend/*/*) [ "$other" = "$sub" ] || {
                if [ "$sub" = . ]; then echo "src/$f: the backend interface includes $inc (it never names a backend)"
                else echo "src/$f: backend $sub includes $inc (backends do not include one another)"; fi
                echo x >>"$tmp"; } ;; esac
        fi
    done
done
grep -v '^#' "$exceptions" 2>/dev/null | grep -v '^[[:space:]]*$' | while IFS= read -r e; do
    grep -qx "$e" "$seen" || { echo "tests/layers/exceptions.txt: \"$e\" no longer occurs: remove it"; echo x >>"$tmp"; }
done
n=$(wc -l <"$tmp")
if [ "$n" -ne 0 ]; then
    echo "layer order: $n violation(s) (tests/layers/layers.txt, docs/architecture.md)"
    exit 1
fi
echo "layer order: $(awk '!/^#/ && NF' "$table" | wc -l) layers, no file includes a later layer ($(wc -l <"$seen") known exceptions, tests/layers/exceptions.txt)"
