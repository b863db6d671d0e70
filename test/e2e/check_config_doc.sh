#!/usr/bin/env bash
# check_config_doc: README's environment table lists exactly the PROFEP_* rows of
# preload/config.c, each with the row's default (the unit test's --dump prints
# "NAME<TAB>default" per row; README's cells are compared without backticks).
BUILD=${BUILD:-build}
cd "$(dirname "$0")/../.." || exit 2
bin=
for b in "$BUILD/test/u_config_table" "$BUILD/test/unit/u_config_table"; do
    [ -x "$b" ] && bin=$b && break
done
if [ -z "$bin" ]; then
    echo "no u_config_table under $BUILD/test: build the tests first"
    exit 1
fi
rows=$("$bin" --dump) || { echo "$bin --dump failed"; exit 1; }
# The table under "## Configuration": "| `NAME` | default | meaning |".
readme=$(awk '/^## Configuration/ { on = 1; next } on && /^## / { exit }
              on && /^\| `PROFEP_/ { print }' README.md |
         awk -F'|' '{ gsub(/`/, "", $2); gsub(/`/, "", $3);
                      gsub(/^ +| +$/, "", $2); gsub(/^ +| +$/, "", $3); print $2 "\t" $3 }')
bad=0
while IFS=$'\t' read -r name def; do
    doc=$(printf '%s\n' "$readme" | awk -F'\t' -v n="$name" '$1 == n { print $2; exit }')
    if ! printf '%s\n' "$readme" | cut -f1 | grep -qx -- "$name"; then
        echo "README's configuration table lacks $name (default: $def)"
        bad=1
    elif [ "$doc" != "$def" ]; then
        echo "README gives $name the default '$doc'; its row in preload/config.c says '$def'"
        bad=1
    fi
done <<<"$rows"
while IFS=$'\t' read -r name _; do
    if ! printf '%s\n' "$rows" | cut -f1 | grep -qx -- "$name"; then
        echo "README's configuration table lists $name, which preload/config.c has no row for"
        bad=1
    fi
done <<<"$readme"
[ "$bad" = 0 ] || exit 1
echo "config doc: README's table matches the $(printf '%s\n' "$rows" | wc -l) rows"
