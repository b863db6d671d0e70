# attach_shim.sh: attach and detach in the tests of issue 41, sourced after lib.sh.
# With build/profep-inject (inject/, `profep attach`) the program is attached from
# outside as a user would; without it (ATTACH_VIA=shim, or the injector not built)
# the program starts with build/test/libpe_attach_shim.so preloaded
# (test/progs/attach_shim.c), whose thread dlopens the library and calls its entry
# points as the injector's bootstrap thread would.  The library is never preloaded.
#   shim_start NAME [VAR=VALUE...] -- PROG ARGS  stdin a fifo on fd 3, output $T/NAME.out/.err
#                                                (SHIM_FIRST: a library preloaded first,
#                                                e.g. another allocator)
#   shim_wait NAME WORD [SECONDS]                until a line WORD is on its stdout
#   shim_cmd attach|detach                       SHIM_RC, SHIM_LINE; attach sets PE_ADDR
# SHIM_SETTINGS: "PROFEP_NAME=value" lines for the attach (PROFEP_ADDR is 127.0.0.1:0).
SHIM=$BUILD/test/libpe_attach_shim.so
INJECT=$BUILD/profep-inject
if [ "${ATTACH_VIA:-}" != shim ] && [ -x "$INJECT" ]; then ATTACH_VIA=inject; else ATTACH_VIA=shim; fi
shim_start() {
    local name=$1 envs=() pre=${SHIM_FIRST:-}
    shift
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    SHIM_DIR=$T/shim
    rm -rf "$SHIM_DIR" "$T/in"; mkdir -p "$SHIM_DIR"; mkfifo "$T/in"
    printf 'PROFEP_ADDR=127.0.0.1:0\n%s\n' "${SHIM_SETTINGS:-}" >"$SHIM_DIR/settings"
    [ $ATTACH_VIA = shim ] && pre="${pre:+$pre }$SHIM"
    env ${pre:+LD_PRELOAD="$pre"} PE_SHIM_DIR="$SHIM_DIR" PE_SHIM_LIB="$LIB" "${envs[@]}" "$@" \
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
    local i out
    SHIM_RC=timeout SHIM_LINE=
    if [ $ATTACH_VIA = inject ]; then
        out=$(env $(grep -E '^PROFEP_[A-Z_]+=' "$SHIM_DIR/settings") timeout 60 \
            "$INJECT" "$1" "$PE_PID" --lib "$LIB" 2>&1)
        SHIM_RC=$?
        SHIM_LINE=$(echo "$out" | tail -1)
        [ "$SHIM_RC" = 0 ] || kill -0 "$PE_PID" 2>/dev/null || SHIM_RC=died
    else
        rm -f "$SHIM_DIR/reply"
        echo "$1" >"$SHIM_DIR/cmd.tmp" && mv "$SHIM_DIR/cmd.tmp" "$SHIM_DIR/cmd"
        for i in $(seq 600); do
            if [ -s "$SHIM_DIR/reply" ]; then
                read -r SHIM_RC SHIM_LINE <"$SHIM_DIR/reply"
                break
            fi
            kill -0 "$PE_PID" 2>/dev/null || { SHIM_RC=died; break; }
            sleep 0.1
        done
    fi
    if [ "$1" = attach ] && [[ $SHIM_LINE =~ serving\ https?://([^ ]+)\ \( ]]; then
        PE_ADDR=${BASH_REMATCH[1]}
    fi
    [ "$SHIM_RC" = 0 ] || [ "$SHIM_RC" = 1 ]
}
