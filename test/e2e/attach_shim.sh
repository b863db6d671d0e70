# attach_shim.sh: attach and detach in the tests of issue 41, sourced after lib.sh.
# Until `profep attach` (inject/) is in the tree, the program is started with
# build/test/libpe_attach_shim.so preloaded (test/progs/attach_shim.c), whose
# thread dlopens the library and calls its entry points as the injector's
# bootstrap thread would; the library itself is not preloaded.
#   shim_start NAME [VAR=VALUE...] -- PROG ARGS  stdin a fifo on fd 3, output $T/NAME.out/.err
#                                                (SHIM_FIRST: a library preloaded before the shim,
#                                                e.g. another allocator)
#   shim_wait NAME WORD [SECONDS]                until a line WORD is on its stdout
#   shim_cmd attach|detach                       SHIM_RC, SHIM_LINE; attach sets PE_ADDR
SHIM=$BUILD/test/libpe_attach_shim.so
shim_start() {
    local name=$1 envs=()
    shift
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    SHIM_DIR=$T/shim
    rm -rf "$SHIM_DIR" "$T/in"; mkdir -p "$SHIM_DIR"; mkfifo "$T/in"
    printf 'PROFEP_ADDR=127.0.0.1:0\n%s' "${SHIM_SETTINGS:-}" >"$SHIM_DIR/settings"
    env LD_PRELOAD="${SHIM_FIRST:+$SHIM_FIRST }$SHIM" PE_SHIM_DIR="$SHIM_DIR" PE_SHIM_LIB="$LIB" "${envs[@]}" "$@" \
        <"$T/in" >"$T/$name.out" 2>"$T/$name.err" &
    PE_PID=$!
    exec 3>"$T/in"
}
shim_wait() { # NAME WORD [SECONDS]
    local i
    for i in $(seq $((${3:-60} * 10))); do
        grep -q "^$2" "$T/$1.out" 2>/dev/null && return 0
        kill -0 "$PE_PID" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
shim_cmd() { # attach|detach: bounded wait for the answer
    local i
    rm -f "$SHIM_DIR/reply"
    echo "$1" >"$SHIM_DIR/cmd.tmp" && mv "$SHIM_DIR/cmd.tmp" "$SHIM_DIR/cmd"
    SHIM_RC=timeout SHIM_LINE=
    for i in $(seq 600); do
        if [ -s "$SHIM_DIR/reply" ]; then
            read -r SHIM_RC SHIM_LINE <"$SHIM_DIR/reply"
            break
        fi
        kill -0 "$PE_PID" 2>/dev/null || { SHIM_RC=died; break; }
        sleep 0.1
    done
    if [ "$1" = attach ] && [[ $SHIM_LINE =~ ^serving\ https?://([^ ]+)\ \( ]]; then
        PE_ADDR=${BASH_REMATCH[1]}
    fi
    [ "$SHIM_RC" = 0 ] || [ "$SHIM_RC" = 1 ]
}
