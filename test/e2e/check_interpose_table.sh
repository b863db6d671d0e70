#!/usr/bin/env bash
# check_interpose_table: interpose/table.c lists exactly the interposers the
# library exports (nm -D --defined-only), the attach entry points
# (profendpoints_*) aside: a new interposer is one definition, one line in
# preload/exports.map and one row in the table, and works both under
# LD_PRELOAD and after an attach.
BUILD=${BUILD:-build}
[ -f "$BUILD/libprofendpoints.so" ] || { echo "SKIP: $BUILD/libprofendpoints.so not built"; exit 77; }
want=$(sed -n 's/^ *{"\([A-Za-z0-9_]*\)", "[a-z]*", .*/\1/p' interpose/table.c | sort)
have=$(nm -D --defined-only "$BUILD/libprofendpoints.so" | awk '{print $3}' | sed 's/@.*//' |
       grep -v '^profendpoints_' | sort)
if [ "$want" != "$have" ]; then
    echo "interpose/table.c and the exported interposers differ (< table, > exported):"
    diff <(echo "$want") <(echo "$have")
    exit 1
fi
echo "interpose table: $(echo "$want" | wc -l) rows, each an exported interposer"
