/*
 * init_state.c: whether the library is active in this process, and whether it
 * was attached to it while it ran (preload/attach.c).  Kept apart from
 * init.c (the constructor) so that modules and unit tests can ask and step
 * aside without pulling in the constructor.
 */
#include <stdio.h>
#include <time.h>

#include "init.h"

static int active;
static int64_t attached_at;            /* writer: attach, before the server starts */
static const char *no_interposers_why; /* idem */

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

int64_t
pe_init_attached_at(void)
{
    return __atomic_load_n(&attached_at, __ATOMIC_ACQUIRE);
}

const char *
pe_init_no_interposers(void)
{
    return __atomic_load_n(&no_interposers_why, __ATOMIC_ACQUIRE);
}

void
pe_init_set_attached(int64_t when, const char *no_interposers)
{
    __atomic_store_n(&no_interposers_why, no_interposers, __ATOMIC_RELEASE);
    __atomic_store_n(&attached_at, when, __ATOMIC_RELEASE);
}

static const char *interpose_note = "";

void
pe_init_set_interpose_note(const char *note)
{
    __atomic_store_n(&interpose_note, note ? note : "", __ATOMIC_RELEASE);
}

const char *
pe_init_interpose_note(void)
{
    return __atomic_load_n(&interpose_note, __ATOMIC_ACQUIRE);
}

const char *
pe_init_attach_note(char *buf, size_t len)
{
    time_t t = (time_t)pe_init_attached_at();
    struct tm tm;

    buf[0] = '\0';
    if (t && gmtime_r(&t, &tm))
        snprintf(buf, len, "since attach at %04d-%02d-%02d %02d:%02d:%02d UTC", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return buf;
}
