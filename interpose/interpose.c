/*
 * interpose.c: attach and detach of the table's interposers (interpose.h).
 * Resolves each row three ways (our definition, found by name in our own
 * object; the program's, the one its slots are bound to, RTLD_DEFAULT; the
 * one the interposer forwards to, RTLD_NEXT), starts the heap in its
 * after-attach way before the first slot leads to it, and drives got.c over
 * every loaded object, again after each dlopen.  One lock orders attach,
 * detach and the walks after dlopen/dlclose (the latter only try it: a
 * fork child that inherited it taken must not hang in dlopen).
 *
 * Signal-safe: no.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../heap/heap.h"
#include "../preload/config.h"
#include "../preload/init.h"
#include "../preload/log.h"
#include "../preload/real.h"
#include "interpose_int.h"

#define MAX_ROWS 256

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t lock_pid; /* the process whose thread holds lock (0: free) */
static pe_ip_target_t targets[MAX_ROWS];
static pe_ip_got_t got;
static int attached;
static char note[2048];
static char names_left[256];     /* rows whose program definition is not what we forward to */
static char stamp[32], last[32]; /* the first attach, the latest */
static int attaches;

/* ---- resolving the rows ------------------------------------------------------------- */

static void
append(char *buf, size_t cap, const char *s)
{
    size_t k = strlen(buf);

    if (k + strlen(s) + 3 < cap)
        snprintf(buf + k, cap - k, "%s%s", k ? ", " : "", s);
}

/*
 * Fill targets[] from the table.  Returns 1 when our definitions already
 * win (LD_PRELOAD: nothing to do), 0, or -errno.
 */
static int
resolve_rows(uintptr_t *self_base)
{
    void *self, *ours_malloc;
    Dl_info di;

    if (pe_interpose_nrows > MAX_ROWS)
        return -E2BIG;
    if (!dladdr((void *)&pe_interpose_attach, &di) || !di.dli_fname)
        return -ENOENT;
    *self_base = (uintptr_t)di.dli_fbase;
    /* Our own object's definitions come first in its own scope. */
    if (!(self = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD)))
        return -ENOENT;
    ours_malloc = dlsym(self, "malloc");
    if (ours_malloc && dlsym(RTLD_DEFAULT, "malloc") == ours_malloc) {
        dlclose(self);
        return 1;
    }
    names_left[0] = '\0';
    for (int k = 0; k < pe_interpose_nrows; k++) {
        const pe_interpose_row_t *r = &pe_interpose_rows[k];
        void *ours = dlsym(self, r->name), *def = dlsym(RTLD_DEFAULT, r->name);
        void *next = dlsym(RTLD_NEXT, r->name);

        targets[k] = (pe_ip_target_t){r->name, 0, (uintptr_t)ours, NULL};
        /* (a name the C library does not define: nothing is bound to it) */
        if (!ours || !def || def == ours ||
            (dladdr(def, &di) && (uintptr_t)di.dli_fbase == *self_base))
            continue;
        if (!r->real && def != next) {
            /* the interposer would forward to another function than the
               one the program calls: leave the name alone */
            append(names_left, sizeof(names_left), r->name);
            continue;
        }
        targets[k].from = (uintptr_t)def;
        targets[k].ver = pe_ip_got_version(def);
    }
    dlclose(self);
    return 0;
}

/* Point the interposers' real functions at the program's definitions. */
static void
set_reals(void)
{
    for (int k = 0; k < pe_interpose_nrows; k++)
        if (pe_interpose_rows[k].real && targets[k].from)
            __atomic_store_n(pe_interpose_rows[k].real, (void *)targets[k].from, __ATOMIC_RELEASE);
}

static int
row_on(const char *name)
{
    for (int k = 0; k < pe_interpose_nrows; k++)
        if (!strcmp(targets[k].name, name))
            return targets[k].from != 0;
    return 0;
}

static void
write_note(void)
{
    char again[96] = "";

    /* alloc_* count from the first attach; in use, from the latest (detach
       counts the samples still listed as freed: heap.h) */
    if (attaches > 1)
        snprintf(again, sizeof(again), " (attached %d times; in use since the latest, at %s)",
                 attaches, last);
    snprintf(note, sizeof(note),
             "since attach at %s%s: %llu objects walked, %llu relocation slots redirected (%llu "
             "read-only pages made writable for it and protected again), %llu slots bound to "
             "another definition left alone%s%s%s%s",
             stamp, again, (unsigned long long)got.objects, (unsigned long long)got.slots,
             (unsigned long long)got.pages, (unsigned long long)got.elsewhere,
             got.nleft ? "; objects left alone: " : "", got.left,
             names_left[0] ? "; names whose definition is not libc's, left alone: " : "",
             names_left);
}

/* ---- the lock --------------------------------------------------------------------------- */

/* Attach and detach wait for it; a fork child that inherited it taken by a
   thread it does not have (a walk after dlopen in the parent) takes a new one. */
static void
lock_hard(void)
{
    if (pthread_mutex_trylock(&lock) != 0) {
        pid_t by = __atomic_load_n(&lock_pid, __ATOMIC_ACQUIRE);
        if (by != 0 && by != getpid())
            lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
        pthread_mutex_lock(&lock);
    }
    __atomic_store_n(&lock_pid, getpid(), __ATOMIC_RELEASE);
}

/* The walks after dlopen and dlclose only try it. */
static int
lock_try(void)
{
    if (pthread_mutex_trylock(&lock) != 0)
        return 0;
    __atomic_store_n(&lock_pid, getpid(), __ATOMIC_RELEASE);
    return 1;
}

static void
unlock(void)
{
    __atomic_store_n(&lock_pid, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock);
}

/* ---- the API ----------------------------------------------------------------------------- */

int
pe_interpose_attach(void)
{
    uintptr_t self_base = 0;
    unsigned long long seen;
    time_t now = time(NULL);
    struct tm tm;
    int rc, heap = 0;

    lock_hard();
    if (attached) {
        unlock();
        return 0;
    }
    pe_real_init();
    if ((rc = resolve_rows(&self_base)) != 0) {
        unlock();
        return rc > 0 ? 0 : rc; /* under LD_PRELOAD: our definitions already win */
    }
    gmtime_r(&now, &tm);
    strftime(last, sizeof(last), "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (!stamp[0])
        memcpy(stamp, last, sizeof(stamp));
    attaches++;
    got.objects = got.slots = got.pages = got.elsewhere = 0;
    got.nleft = 0;
    got.left[0] = '\0';
    write_note();
    pe_ip_got_free(&got); /* (the last attach's mappings) */
    if ((rc = pe_ip_got_init(&got, targets, pe_interpose_nrows)) < 0)
        goto out;
    got.skip_base = self_base;
    set_reals();
    pe_init_set_interpose_note(note); /* the mutex and block profiles say it too */
    /* The heap's after-attach way first: no slot may lead to free() while
       it could still read below a block (heap.h). */
    if (row_on("malloc") && row_on("free")) {
        if ((rc = pe_heap_attach(pe_cfg.heap_rate, note)) < 0)
            goto out;
        heap = 1;
    }
    do { /* (a dlopen meanwhile only tried the lock: walk again) */
        seen = pe_ip_got_adds();
        rc = pe_ip_got_patch(&got);
    } while (rc >= 0 && pe_ip_got_adds() != seen);
    if (rc < 0) {
        (void)pe_ip_got_restore(&got);
        if (heap)
            pe_heap_detach();
        goto out;
    }
    write_note();
    attached = 1;
    rc = 0;
out:
    unlock();
    return rc;
}

void
pe_interpose_detach(void)
{
    lock_hard();
    if (attached) {
        (void)pe_ip_got_restore(&got);
        /* After the slots: a thread still inside free() finds its sample
           either way (side.c's claims are one CAS). */
        pe_heap_detach();
        attached = 0;
    }
    unlock();
}

void
pe_interpose_loaded(void)
{
    unsigned long long seen;

    if (!__atomic_load_n(&attached, __ATOMIC_ACQUIRE) || !lock_try())
        return; /* (the lock's holder walks again when it sees objects added meanwhile) */
    if (attached) {
        do {
            seen = pe_ip_got_adds();
            (void)pe_ip_got_patch(&got);
        } while (pe_ip_got_adds() != seen);
        write_note();
    }
    unlock();
}

void
pe_interpose_unloaded(void)
{
    if (!__atomic_load_n(&attached, __ATOMIC_ACQUIRE) || !lock_try())
        return;
    if (attached)
        pe_ip_got_prune(&got);
    unlock();
}
