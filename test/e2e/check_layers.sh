#!/usr/bin/env bash
# check_layers: the module graph has no edge that points up.
#
# The layers, lowest first (a file may use its own layer and any below):
#   0 base     preload/ except the top files below: config, log, the real
#              libc functions, TLS and the re-entrancy guard, the thread
#              registry, fd bookkeeping, the life-cycle state (init.h), the
#              one /proc reader (proc.h), the one port-file writer
#              (portfile.h)
#   1 symbols  addresses to names: loaded objects, the one ELF reader and
#              debug-file search, the one byte reader (bytes.h, which stack/
#              reads with too), JIT maps, CPython names
#   2 stack    a thread to frames: the unwinder, the cached-rules walk,
#              /proc capture of blocked threads, CPython frames
#   3 sink     the byte sinks every encoder writes into, gzip, the one JSON
#              and one XML escaper
#   4 profile  the profile model (profile.h), the naming pass, mappings,
#              CPython frames; model.h, its insides, is for profile/, proto/
#              and render/ only
#   5 proto    what is protobuf: the pprof encoder and the one decoder;
#     render   beside it (neither uses the other): the text, folded, SVG
#              and Go text views, the heap snapshot, the timeline chart and
#              the trace JSON
#   6 trace    the thread trace's event feed (trace/feed.h), which every
#              module above may write into; the recording is sampler/'s
#   7 sampler  CPU and wall sampling, on-demand stack capture, the peek,
#              the trace's recording; and, beside it, contention/: lock
#              contention and its interposers
#   8 heap     allocation sampling, the live table, its history
#   9 http     the server, routing, parameters, the endpoint handlers
#  10 top      preload/init.c (the constructor), preload/events.[ch] (the
#              process events, which call every module), preload/*hooks.c
#              (the interposers), preload/alone*.c (the step aside, which
#              stops every module, and its interposers), interpose/ (their table, and the
#              redirection of relocation slots after an attach)
# Checked: every #include "..." of a tracked C file, and, when $BUILD has the
# objects, every pe_* symbol an object uses (an extern declaration written by
# hand is an edge too).  A module's *_int.h is for its own files only.
# Also: profile/'s headers declare no function of proto/ or render/ (each
# encoder is declared in its own folder's header).
# ALLOWED lists an upward edge that is meant, with its reason (none today).
set -u
cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build}

# "file -> target" pairs allowed to point up, one per line: pair  # reason
ALLOWED=""

# Edges as "from to how" lines, then one awk pass judges them all.
edges() {
    local files f dir inc
    files=$(git ls-files 'preload/*.[ch]' 'symbols/*.[ch]' 'stack/*.[ch]' 'sink/*.[ch]' 'profile/*.[ch]' \
        'proto/*.[ch]' 'render/*.[ch]' 'trace/*.[ch]' 'sampler/*.[ch]' 'contention/*.[ch]' 'heap/*.[ch]' \
        'http/*.[ch]' 'http/**/*.[ch]' 'interpose/*.[ch]' 2>/dev/null |
        sort -u)
    [ -n "$files" ] || files=$(ls preload/*.[ch] symbols/*.[ch] stack/*.[ch] sink/*.[ch] profile/*.[ch] \
        proto/*.[ch] render/*.[ch] trace/*.[ch] sampler/*.[ch] contention/*.[ch] heap/*.[ch] http/*.[ch])
    for f in $files; do
        dir=${f%/*}
        sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
            while read -r inc; do
                case $inc in
                ../*) echo "$f ${inc#../} includes" ;;
                *) echo "$f $dir/$inc includes" ;;
                esac
            done
    done
    # Symbols, when built: who uses a pe_* function or variable, who defines it.
    if ls "$BUILD"/preload/*.o >/dev/null 2>&1; then
        for o in "$BUILD"/{preload,symbols,stack,sink,profile,proto,render,trace,sampler,contention,heap,http,interpose}/*.o; do
            o2=${o#"$BUILD"/}
            [ -f "${o2%.o}.c" ] || continue # left by a file since moved: not ours any more
            nm -A "$o" 2>/dev/null
        done | awk -v b="$BUILD/" '
            { split($1, a, ":"); src = substr(a[1], length(b) + 1); sub(/\.o$/, ".c", src) }
            NF == 3 && $2 == "U" && $3 ~ /^pe_/ { use[$3] = use[$3] " " src }
            NF == 3 && $2 ~ /^[TDBRC]$/ && $3 ~ /^pe_/ { def[$3] = src }
            END { for (s in use) if (s in def) { n = split(use[s], u, " ");
                      for (i = 1; i <= n; i++) print u[i], def[s], "uses-a-symbol-of" } }'
    fi
}

# A folder's headers declare what the folder defines: no encoder of proto/ or
# render/ is declared in profile/'s headers (the model's).
misplaced() {
    local s o objs=()
    for o in "$BUILD"/proto/*.o "$BUILD"/render/*.o; do
        s=${o#"$BUILD"/}
        [ -f "${s%.o}.c" ] && objs+=("$o")
    done # (an object left by a file since moved is not the folder's)
    [ ${#objs[@]} -gt 0 ] || return 0
    nm "${objs[@]}" 2>/dev/null | awk '$2 == "T" && $3 ~ /^pe_/ { print $3 }' |
        sort -u | while read -r s; do
        grep -lw -- "$s" profile/*.h 2>/dev/null | sed "s|\$| declares $s, defined in proto/ or render/: declare it in their header|"
    done
}
placed=$(misplaced)

out=$(edges | sort -u | awk -v allowed="$ALLOWED" '
    function layer(p) {
        if (p ~ /^preload\/(init\.c|attach\.c|events\.[ch]|[a-z_]*hooks\.c|alone[a-z_]*\.c)$/) return 10
        if (p ~ /^interpose\//) return 10
        if (p ~ /^preload\//) return 0
        if (p ~ /^symbols\//) return 1
        if (p ~ /^stack\//) return 2
        if (p ~ /^sink\//) return 3
        if (p ~ /^profile\//) return 4
        if (p ~ /^(proto|render)\//) return 5
        if (p ~ /^trace\//) return 6
        if (p ~ /^sampler\//) return 7
        if (p ~ /^contention\//) return 7
        if (p ~ /^heap\//) return 8
        if (p ~ /^http\//) return 9
        return -1
    }
    BEGIN {
        split("base symbols stack sink profile proto/render trace sampler heap http top", name, " ")
        n = split(allowed, al, "\n")
        for (i = 1; i <= n; i++) { sub(/ *#.*/, "", al[i]); if (al[i] != "") ok[al[i]] = 1 }
    }
    {
        from = $1; to = $2; how = $3
        gsub(/\/\.\//, "/", to)
        lf = layer(from); lt = layer(to)
        if (lf < 0 || lt < 0) next # generated (profile.pb.h) or outside the modules
        checked[how]++
        if (lt > lf && !((from " -> " to) in ok)) {
            printf "layers: %s (%s) %s %s (%s)\n", from, name[lf + 1], how, to, name[lt + 1]
            bad++
        }
        split(from, fm, "/"); split(to, tm, "/")
        if (lf == 5 && lt == 5 && fm[1] != tm[1]) {
            printf "layers: %s %s %s: proto/ and render/ stand beside each other, neither uses the other\n", from, how, to
            bad++
        }
        if (how == "includes" && to == "profile/model.h" && fm[1] !~ /^(profile|proto|render)$/) {
            printf "layers: %s includes profile/model.h, the model'"'"'s insides for its encoders; use profile.h\n", from
            bad++
        }
        if (how == "includes" && to ~ /_int\.h$/ && fm[1] != tm[1]) {
            printf "layers: %s includes another module'"'"'s internal header %s\n", from, to
            bad++
        }
    }
    END {
        if (bad) { printf "layers: %d upward edge(s); see the layer list at the top of test/e2e/check_layers.sh\n", bad; exit 1 }
        printf "layers: %d includes and %d symbol uses checked, none points up\n",
               checked["includes"], checked["uses-a-symbol-of"]
    }')
rc=$?
echo "$out"
if [ -n "$placed" ]; then
    echo "$placed" | sed 's/^/layers: /'
    rc=1
fi
exit $rc
