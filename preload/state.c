/*
 * state.c: whether the library is active in this process.  Kept apart from
 * init.c (the constructor) so that modules and unit tests can ask and step
 * aside without pulling in the constructor.
 */
#include "init.h"

static int active;

PE_SIGSAFE int
pe_init_active(void)
{
    return __atomic_load_n(&active, __ATOMIC_RELAXED);
}

void
pe_init_set_active(void)
{
    __atomic_store_n(&active, 1, __ATOMIC_RELAXED);
}

void
pe_init_go_dormant(void)
{
    __atomic_store_n(&active, 0, __ATOMIC_RELAXED);
}
