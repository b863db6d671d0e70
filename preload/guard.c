/*
 * guard.c: the per-thread state (pe_tls), the cached tid and the stripe.
 * The struct is zero-filled by the loader in every thread's static TLS block.
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "guard.h"

PE_TLS pe_tls_t pe_tls;

PE_SIGSAFE pid_t
pe_gettid(void)
{
    if (PE_UNLIKELY(pe_tls.tid == 0))
        pe_tls.tid = (pid_t)syscall(SYS_gettid);
    return pe_tls.tid;
}

PE_SIGSAFE unsigned
pe_stripe_assign(void)
{
    static unsigned next;
    unsigned s = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % PE_STRIPES;

    pe_tls.stripe = s + 1;
    return s;
}
