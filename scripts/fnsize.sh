#!/usr/bin/env bash
# fnsize.sh: list the C functions longer than N lines (default 100), largest
# first, as "LINES FILE:LINE NAME".
#   scripts/fnsize.sh [N] [FILE...]
# Without FILEs it reads every .c file git knows outside test/.  It counts the
# lines from the opening brace to the closing one, both included, and relies on
# the clang-format layout of .clang-format (BreakBeforeBraces: Linux): a
# function's braces, and only a function's, stand alone in column 0 (an
# initializer's "= {" and a struct's "struct x {" do not).  The name is the last
# identifier before "(" on the nearest line above the brace that starts in
# column 0.  test/e2e/check_fnsize.sh runs it with an allow list.
set -u
cd "$(dirname "$0")/.." || exit 2
max=100
case ${1:-} in
'' | *[!0-9]*) ;;
*) max=$1; shift ;;
esac
if [ $# -eq 0 ]; then
    set -- $(git ls-files '*.c' 2>/dev/null | grep -v '^test/')
fi
awk -v max="$max" '
FNR == 1 { start = 0; head = "" }
/^[A-Za-z_]/ && index($0, "(") { head = $0; headline = FNR }
/^\{[ \t]*$/ { start = FNR; next }
/^\}/ && start {
    n = FNR - start + 1
    name = head
    sub(/\(.*/, "", name)
    sub(/.*[^A-Za-z0-9_]/, "", name)
    if (n > max)
        printf "%d %s:%d %s\n", n, FILENAME, headline, name
    start = 0
}' "$@" | sort -rn
