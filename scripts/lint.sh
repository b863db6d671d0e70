#!/usr/bin/env bash
# lint.sh (`make lint`, and test/e2e/check_lint.sh in `make test`):
#  1. every C file is as clang-format (.clang-format) would write it;
#  2. whatever a signal handler, the malloc path or a PE_SIGSAFE function can
#     reach is static or declared PE_SIGSAFE, and calls outside our sources are
#     async-signal-safe (scripts/sigsafe.py).
set -u
cd "$(dirname "$0")/.." || exit 2
rc=0
if command -v clang-format >/dev/null; then
    for f in $(git ls-files '*.c' '*.h' 2>/dev/null || ls */*.c */*.h */*/*.c */*/*.h); do
        if clang-format --dry-run "$f" 2>&1 | grep -q warning; then
            echo "lint: $f is not clang-formatted (make format)"
            rc=1
        fi
    done
else
    echo "lint: clang-format not installed; layout not checked"
fi

# 2. PE_SIGSAFE, transitively (scripts/sigsafe.py says how): from the signal
#    handlers, the malloc family's entry points and every PE_SIGSAFE function,
#    each function of ours reached must be static or declared PE_SIGSAFE, and
#    each one not ours on this list.
# The roots: kind:file:function.
roots="handler:sampler/handler.c:pe_cpu_handler handler:sampler/peek.c:peek_handler"
for f in malloc free calloc realloc reallocarray malloc_usable_size posix_memalign aligned_alloc \
    memalign valloc pvalloc free_sized free_aligned_sized; do
    roots="$roots malloc:heap/malloc_hooks.c:$f"
done
# signal-safety(7) (POSIX.1-2008 TC2 and later, string functions included)...
safe="getpid write read open close fstat readlink _exit errno sigaction sigprocmask pthread_sigmask
      sigemptyset sigfillset sigaddset sem_post syscall clock_gettime
      memcpy memmove memset memcmp strlen strcmp strncmp strchr strrchr strstr"
# ...the system calls glibc wraps without locks or allocation...
safe="$safe mmap munmap mremap madvise getrlimit process_vm_readv sched_yield"
# ...and libunwind's local unwinder, signal-safe for a local address space
# (libunwind(3), unw_init_local(3)): dlsym'd pointers, called by these names.
safe="$safe unw_bt unw_init2 unw_stp unw_getreg unw_procinfo"
# Edges not followed, caller>callee, each with its reason.
allowed="
*>pe_real_init
pe_sig_real_action>sigaction
PE_MUTEX_REAL>pe_mutex_next
page_size>sysconf
pe_mutex_inline_decide>lock
pe_mutex_inline_decide>pthread_mutex_trylock
pe_mutex_inline_decide>pthread_mutex_unlock
pe_mutex_inline_decide>pthread_mutex_destroy
pe_fd_sys_close>f
pe_fd_sys_fcntl>f
pe_unwind_iterate_snapshot>cb
take_stack>bt
take_stack>vfy_compare
*>pe_heap_own_*
"
# *>pe_real_init, pe_sig_real_action>sigaction, PE_MUTEX_REAL>pe_mutex_next:
#   the fallbacks taken only while pe_real is not yet resolved (the loader's
#   first allocations, the constructor's first calls): the constructor resolves
#   it before any handler of ours is installed.
# page_size>sysconf: _SC_PAGESIZE reads a word the loader set, no lock.
# pe_mutex_inline_decide>...: the one-time check of glibc's mutex layout locks a
#   mutex on its own stack: no other thread or handler can hold it.
# pe_fd_sys_close>f, pe_fd_sys_fcntl>f, pe_unwind_iterate_snapshot>cb, take_stack>bt: calls
#   through pointers (the real close, a dl_iterate_phdr callback, unw_backtrace).
# *>pe_heap_own_*: heap/own.c, the allocator of our own threads (a spin lock):
#   they run with every signal blocked, and the program's threads only test
#   a block's header words there (its owner may mark those PE_SIGSAFE).
# take_stack>vfy_compare: PE_HEAP_CFI_VERIFY's check build only (its own .so).
if command -v python3 >/dev/null; then
    python3 scripts/sigsafe.py "$roots" "$safe" "$allowed" || rc=1
else
    echo "lint: python3 not installed; PE_SIGSAFE not checked"
fi
[ $rc = 0 ] && echo "lint: clean"
exit $rc
