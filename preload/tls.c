/*
 * tls.c: the per-thread state (pe_tls), the cached tid and the stripe.
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

/* tid of each owned stripe's owner, 0 = free */
static pid_t stripe_owner[PE_STRIPES_OWNED];

PE_SIGSAFE unsigned
pe_stripe_assign(void)
{
    static unsigned next;
    unsigned s;

    if (pe_tls.may_own_stripe && !pe_tls.internal) {
        pid_t tid = pe_gettid();
        for (s = 0; s < PE_STRIPES_OWNED; s++) {
            pid_t free_ = 0;
            if (__atomic_load_n(&stripe_owner[s], __ATOMIC_RELAXED) == 0 &&
                __atomic_compare_exchange_n(&stripe_owner[s], &free_, tid, 0, __ATOMIC_ACQUIRE,
                                            __ATOMIC_RELAXED)) {
                pe_tls.stripe_owned = 1;
                pe_tls.stripe = s + 1;
                return s;
            }
        }
    }
    s = PE_STRIPES_OWNED +
        __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % (PE_STRIPES - PE_STRIPES_OWNED);
    pe_tls.stripe_owned = 0;
    pe_tls.stripe = s + 1;
    return s;
}

void
pe_stripe_release(void)
{
    unsigned s = pe_tls.stripe;

    pe_tls.may_own_stripe = 0; /* whatever runs after this on the thread shares */
    if (!pe_tls.stripe_owned || s == 0)
        return;
    pe_tls.stripe_owned = 0;
    pe_tls.stripe = 0;
    /* Our adds were plain stores: make them visible before the next owner's. */
    __atomic_store_n(&stripe_owner[s - 1], 0, __ATOMIC_RELEASE);
}
