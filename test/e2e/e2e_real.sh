#!/usr/bin/env bash
# e2e_real: the library inside programs nobody here wrote (Debian's python3,
# perl, bzip2, xz): their output is unchanged and their own functions show up,
# by name, in CPU and heap profiles read by go tool pprof.
source test/e2e/lib.sh

cpu_names() { # expected-regex program args...: profile 2 s of the program, check top
    local want=$1; shift
    pe_start "$@" || { bad "start $1"; return; }
    pe_get '/profile?duration=2' -o $T/real.pb.gz
    if pprof_top $T/real.pb.gz | grep -Eq "$want"; then
        ok "CPU profile of $1 names $want"
    else
        bad "CPU profile of $1 names $want"; pprof_top $T/real.pb.gz | head -n 20
    fi
    pe_stop
}
command -v go >/dev/null || { echo "go missing"; exit 77; }

cpu_names '_PyEval_EvalFrameDefault' /usr/bin/python3 -c '
import time
t = time.time()
while time.time() - t < 6:
    sum(i * i for i in range(1000))'
cpu_names 'Perl_(runops_standard|pp_)' /usr/bin/perl -e 'my $t = time; my $x = 0; while (time - $t < 6) { $x += $_ * 2 for 1 .. 1000 }'
seq 1 4000000 >$T/data
if [ -x /usr/bin/bzip2 ]; then
    cpu_names 'BZ2_' /usr/bin/bzip2 -9 -c $T/data $T/data $T/data
fi
if [ -x /usr/bin/xz ]; then
    cpu_names 'lzma_' /usr/bin/xz -6 -T1 -c $T/data $T/data
fi

# Output unchanged: compressors produce identical bytes with the library loaded.
a=$(/usr/bin/gzip -c $T/data | md5sum); b=$(PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB /usr/bin/gzip -c $T/data 2>/dev/null | md5sum)
check "gzip output identical with the library" [ "$a" = "$b" ]
a=$(/usr/bin/python3 -c 'import hashlib; print(hashlib.sha256(bytes(range(256))*4096).hexdigest(), sorted({i % 97 for i in range(10**5)})[:5])')
b=$(PROFEP_ADDR=127.0.0.1:0 LD_PRELOAD=$LIB /usr/bin/python3 -c 'import hashlib; print(hashlib.sha256(bytes(range(256))*4096).hexdigest(), sorted({i % 97 for i in range(10**5)})[:5])' 2>/dev/null)
check "python3 output identical with the library" [ "$a" = "$b" ]
# Every allocation sampled (PROFEP_HEAP_RATE=1): every block the interpreters
# allocate carries our tag, through their realloc, calloc and
# malloc_usable_size; the output must not change.
py='import json, re, collections
d = {str(i): [i] * (i % 50) for i in range(20000)}
s = json.dumps(d)
c = collections.Counter(re.findall(r"\d+", s))
print(len(s), sum(c.values()), c.most_common(2), bytearray(b"x" * 100000).count(b"x"))'
a=$(/usr/bin/python3 -c "$py")
b=$(PROFEP_ADDR=127.0.0.1:0 PROFEP_HEAP_RATE=1 LD_PRELOAD=$LIB /usr/bin/python3 -c "$py" 2>/dev/null)
check "python3 output identical with every allocation sampled" [ -n "$a" -a "$a" = "$b" ]
pl='my %h; $h{$_} = "x" x ($_ % 300) for 1 .. 200000; my $t = 0; $t += length $h{$_} for keys %h; my $s = ""; $s .= "ab" for 1 .. 100000; print "$t ", length $s, "\n"'
a=$(/usr/bin/perl -e "$pl")
b=$(PROFEP_ADDR=127.0.0.1:0 PROFEP_HEAP_RATE=1 LD_PRELOAD=$LIB /usr/bin/perl -e "$pl" 2>/dev/null)
check "perl output identical with every allocation sampled" [ -n "$a" -a "$a" = "$b" ]

# Heap: python3 holding ~64 MiB in bytearrays shows up in the live heap.
pe_start /usr/bin/python3 -c '
import time
keep = [bytearray(1 << 20) for _ in range(64)]
time.sleep(8)' || bad "start python3 heap"
sleep 1.5
pe_get /debug/pprof/heap -o $T/heap.pb.gz
top=$(pprof_top $T/heap.pb.gz -sample_index=inuse_space)
total=$(go tool pprof -raw -sample_index=inuse_space $T/heap.pb.gz 2>/dev/null | awk '/^Samples:/ {on=1; next} on && /^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+:/ {sub(":", "", $4); s += $4} /^Locations/ {on=0} END {print s+0}')
if grep -Eq 'PyByteArray|bytearray' <<<"$top"; then ok "heap profile of python3 names its allocating function"; else bad "heap profile of python3 names its allocating function"; echo "$top" | head -20; fi
mib=$((total / 1048576))
check "python3 live heap estimate near 64 MiB (got $mib MiB)" [ "$mib" -ge 48 ] && [ "$mib" -le 84 ]
pe_stop
pe_finish
