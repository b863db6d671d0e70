/* aslimit.c: table sizes within an address-space limit (aslimit.h). */
#include <sys/resource.h>

#include "aslimit.h"

/* The limit in bytes, or 0 when there is none. */
static uint64_t
aslimit(void)
{
    static uint64_t limit; /* UINT64_MAX: none; 0: not read yet */
    uint64_t v = __atomic_load_n(&limit, __ATOMIC_RELAXED);
    struct rlimit rl;

    if (!v) {
        v = getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (uint64_t)rl.rlim_cur
                                                                           : UINT64_MAX;
        __atomic_store_n(&limit, v, __ATOMIC_RELAXED);
    }
    return v == UINT64_MAX ? 0 : v;
}

uint32_t
pe_aslimit_fit(uint32_t want, size_t per, unsigned share, uint32_t least)
{
    uint64_t limit = aslimit();

    while (limit && want / 2 >= least && (uint64_t)want * per > limit / share)
        want /= 2;
    return want;
}
