#!/usr/bin/env bash
# run.sh: the test runner behind `make test`.
#   test/run.sh [-k PATTERN] BUILD [EXTRA_BUILD...]
# Runs every unit test binary (BUILD/test/u_*, then each EXTRA_BUILD/test/u_*,
# the ASan+UBSan build) and every end-to-end script (test/e2e/e2e_*.sh and
# test/e2e/check_*.sh), each bounded in time, PE_TEST_JOBS at once (default:
# the CPUs, at least 2 and at most 4).  With PATTERN (-k, or the
# environment's T, as in `make test T=heap`) only the tests whose name matches
# it run: an extended regular expression searched in the name as printed
# (u_heap, build-asan/u_heap, e2e_heap_time, check_lint), so `-k heap` runs
# every heap test and `-k '^u_'` the unit tests.  Exit codes: 0 pass, 77 skip,
# else fail.  A script with a line "# run.sh: alone (WHY)" among its first 40
# runs with no other test beside it.  Each test's lines are printed when it
# ends; the last line is "N passed, N failed, N skipped".
set -u
pattern=${T:-}
unset T # the e2e harness uses T for its temporary directory
while [ $# -gt 0 ]; do
    case $1 in
    -k) pattern=${2:-}; shift 2 ;;
    -k*) pattern=${1#-k}; shift ;;
    -h | --help) sed -n '2,14s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) break ;;
    esac
done
BUILD=${1:-build}
export BUILD TEST_DIR=test
cd "$(dirname "$0")/.." || exit 2
# Most of a test's time is waiting (profiles are real time, sleeps, browsers),
# so a few at once use the machine; more than 4 would make the scripts' CPU-bound
# programs fight each other (their checks tolerate a loaded machine, not any).
jobs=${PE_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
[ -z "${PE_TEST_JOBS:-}" ] && { [ "$jobs" -lt 2 ] && jobs=2; [ "$jobs" -gt 4 ] && jobs=4; }
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: PE_TEST_JOBS=$jobs is not a number of jobs" >&2; exit 2; }
# wait -n -p (which job ended) is bash 5.1's
[ "${BASH_VERSINFO[0]}${BASH_VERSINFO[1]}" -ge 51 ] 2>/dev/null || jobs=1
passed=0 failed=0 skipped=0 failures=()
logdir=$(mktemp -d /tmp/pe-test.XXXXXX)

# The queue: name, time limit, alone (1/0, the script's mark), command (a binary, or a
# script for bash).
q_name=() q_limit=() q_alone=() q_cmd=()
add() { # name limit command
    local alone=0
    [ -z "$pattern" ] || [[ $1 =~ $pattern ]] || return 0
    [[ $3 == *.sh ]] && head -n 40 "$3" | grep -q '^# run\.sh: alone' && alone=1
    q_name+=("$1") q_limit+=("$2") q_alone+=("$alone") q_cmd+=("$3")
}
for t in "$BUILD"/test/u_*; do
    [ -x "$t" ] || continue
    add "$(basename "$t")" 120 "$t"
done
# Extra build directories (the ASan+UBSan build of the unit tests).
for extra in "${@:2}"; do
    for t in "$extra"/test/u_*; do
        [ -x "$t" ] || continue
        add "$(basename "$extra")/$(basename "$t")" 300 "$t"
    done
done
# the checks first: check_lint (a minute of CPU) would otherwise end the run alone
for t in test/e2e/check_*.sh test/e2e/e2e_*.sh; do
    [ -f "$t" ] || continue
    add "$(basename "$t" .sh)" 600 "$t" # e2e_heap_cases takes 200 s at load 16
done

# Running: pid -> queue index, and when it started.
declare -A running=() started=()
cleanup() { # on an interrupt: stop what runs (timeout passes the signal on to its test)
    local p
    for p in "${!running[@]}"; do kill -TERM "$p" 2>/dev/null; done
    wait
    rm -rf "$logdir"
}
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
launch() { # queue index
    local i=$1 log="$logdir/${q_name[$1]//\//_}.log"
    # own stdin (an async command's is /dev/null anyway); timeout gives the test
    # default SIGINT/SIGQUIT dispositions, which bash sets to ignored for it
    if [[ ${q_cmd[i]} == *.sh ]]; then
        timeout -k 5 "${q_limit[i]}" bash "${q_cmd[i]}" </dev/null >"$log" 2>&1 &
    else
        timeout -k 5 "${q_limit[i]}" "${q_cmd[i]}" </dev/null >"$log" 2>&1 &
    fi
    running[$!]=$i
    started[$!]=$SECONDS
}
report() { # queue index, exit status, seconds: the test's lines, whole, as it ends
    local name=${q_name[$1]} rc=$2 secs=$3 log="$logdir/${q_name[$1]//\//_}.log"
    case $rc in
    0) passed=$((passed + 1)); printf 'PASS  %-36s %3ds\n' "$name" "$secs" ;;
    77) skipped=$((skipped + 1)); printf 'SKIP  %-36s %s\n' "$name" "$(tail -n 1 "$log")" ;;
    *) failed=$((failed + 1)); failures+=("$name")
       {
           printf 'FAIL  %-36s (exit %d)\n' "$name" "$rc"
           # the failed checks first (they may lie above the tail), then the tail
           grep -E '^FAIL |CHECK failed' "$log" | head -n 20 | sed 's/^/      ! /'
           sed 's/^/      | /' "$log" | tail -n 40
       } ;;
    esac
}
reap() { # wait for one running test to end and report it
    local pid rc
    if [ ${#running[@]} -eq 1 ]; then
        pid=${!running[*]}
        wait "$pid"; rc=$?
    else
        wait -n -p pid; rc=$?
    fi
    if [ -z "${pid:-}" ] || [ -z "${running[$pid]:-}" ]; then
        # not one of ours, or none left to wait for (127): take them one by one
        [ "$rc" = 127 ] && for pid in "${!running[@]}"; do
            wait "$pid"; rc=$?
            report "${running[$pid]}" "$rc" $((SECONDS - ${started[$pid]}))
            unset "running[$pid]" "started[$pid]"
        done
        return 0
    fi
    report "${running[$pid]}" "$rc" $((SECONDS - ${started[$pid]}))
    unset "running[$pid]" "started[$pid]"
}
# The alone tests first, one by one (nothing to drain before them), then the others.
for ((i = 0; i < ${#q_name[@]}; i++)); do
    [ "${q_alone[i]}" = 1 ] || continue
    launch "$i"
    reap
done
for ((i = 0; i < ${#q_name[@]}; i++)); do
    [ "${q_alone[i]}" = 1 ] && continue
    while [ ${#running[@]} -ge "$jobs" ]; do reap; done
    launch "$i"
done
while [ ${#running[@]} -gt 0 ]; do reap; done
rm -rf "$logdir"
[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
