#!/usr/bin/env bash
# check_exports: the library exports exactly the symbols of preload/exports.map.
BUILD=${BUILD:-build}
want=$(sed -n '/global:/,/local:/p' preload/exports.map | grep -v 'global:\|local:' |
       tr ';' '\n' | tr -d ' ' | grep -v '^$' | sort)
have=$(nm -D --defined-only "$BUILD/libprofendpoints.so" | awk '{print $3}' | sed 's/@.*//' | sort)
if [ "$want" != "$have" ]; then
    echo "exported symbols differ from preload/exports.map:"
    diff <(echo "$want") <(echo "$have")
    exit 1
fi
echo "exports: $(echo "$have" | wc -l) symbols, as listed"
