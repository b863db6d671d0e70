#!/usr/bin/env bash
# check_layout: every test file is where test/README.md says (unit/, e2e/,
# progs/, bench/; nothing else at the top of test/ but run.sh and README.md),
# and every script uses the one harness, test/e2e/lib.sh.
cd "$(dirname "$0")/../.." || exit 2
rc=0
for f in test/*; do
    case $f in
    test/run.sh | test/README.md | test/unit | test/e2e | test/progs | test/bench) ;;
    test/u_*.c | test/fuzz_*.c | test/e2e_*.sh | test/check_*.sh | test/p_*.c | test/p_*.cc | test/bench_*.c) ;; # below
    *) echo "layout: $f belongs in test/unit, test/e2e, test/progs or test/bench (test/README.md)"; rc=1 ;;
    esac
done
misplaced() { # dir glob: files matching glob anywhere under test/ but dir
    local f
    for f in $(find test -name "$2" -not -path "test/$1/*"); do
        echo "layout: $f belongs in test/$1"; rc=1
    done
}
for g in 'u_*.c' 'fuzz_*.c'; do misplaced unit "$g"; done
for g in 'e2e_*.sh' 'check_*.sh'; do misplaced e2e "$g"; done
for g in 'p_*.c' 'p_*.cc'; do misplaced progs "$g"; done
misplaced bench 'bench_*.c'
if grep -lE '(source|\.) +test/(lib\.sh|e2e_heap\.inc)' test/e2e/*.sh scripts/*.sh 2>/dev/null; then
    echo "layout: the scripts above source an old harness; use test/e2e/lib.sh"
    rc=1
fi
[ $rc = 0 ] && echo "layout: clean"
exit $rc
