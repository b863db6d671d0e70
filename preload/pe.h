/*
 * pe.h: project-wide macros shared by every module of libprofendpoints.
 *
 * PE_EXPORT marks the few definitions the host may bind to (the interposed
 * libc/pthread entry points); everything else is hidden by -fvisibility=hidden
 * and by preload/exports.map.  PE_SIGSAFE marks declarations that may run in
 * a signal handler (see `make lint`).  PE_TESTONLY marks a declaration that
 * a header shows only for the unit tests: nothing else outside its file may
 * use it (test/e2e/check_testonly.sh).  pe_round_i64 is llround without libm.
 *
 * Signal-safe: yes (macros and one arithmetic inline).
 */
#ifndef PE_H
#define PE_H

#include <stddef.h>
#include <stdint.h>

#define PE_EXPORT __attribute__((visibility("default")))
#define PE_HIDDEN __attribute__((visibility("hidden")))
#define PE_SIGSAFE  /* may run in a signal handler: no locks, no malloc, no stdio */
#define PE_TESTONLY /* seen outside its file by the unit tests only */
#define PE_NODISCARD __attribute__((warn_unused_result))
#define PE_LIKELY(x) __builtin_expect(!!(x), 1)
#define PE_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define PE_TLS __thread __attribute__((tls_model("initial-exec")))
#define PE_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define PE_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define PE_CACHELINE 64

/* Nearest integer, halves away from zero (llround without libm: the library
   links no libm, whose 0.9 MB of address space counts under `ulimit -v`). */
static inline int64_t
pe_round_i64(double x)
{
    if (x != x)
        return 0;
    if (x >= 9.2e18)
        return INT64_MAX;
    if (x <= -9.2e18)
        return INT64_MIN;
    return x >= 0 ? (int64_t)(x + 0.5) : -(int64_t)(-x + 0.5);
}

/* Deepest stack any sampler keeps; deeper stacks are truncated at the root end. */
#define PE_MAX_FRAMES 128

#endif /* PE_H */
