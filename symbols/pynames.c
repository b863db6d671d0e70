/*
 * pynames.c: the process-wide table behind NAMED Python frame tags
 * (pynames.h).  One mmap'd block made on first use: entries, an
 * open-addressing index over them (twice as many slots), and the string pool.
 * Append-only, so a name handed out stays valid for the process's life.
 *
 * Signal-safe: no.
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "pynames.h"

#define NAME_MAX_LEN 255
#define NSLOTS (2 * PE_PYNAMES_MAX)

typedef struct entry_s {
    uint32_t qual, file; /* offsets into the pool */
    int32_t first, line;
} entry_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static entry_t *entries; /* [PE_PYNAMES_MAX]; entry 0 is "<python>" */
static uint32_t *slots;  /* [NSLOTS], entry index + 1 */
static char *pool;       /* [PE_PYNAMES_POOL], NUL-terminated strings */
static uint32_t nentries, pool_used;

static uint32_t
hash_names(const char *q, const char *f, int32_t first, int32_t line)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    for (; *q; q++)
        h = (h ^ (unsigned char)*q) * 16777619u;
    h = (h ^ 1u) * 16777619u;
    for (; *f; f++)
        h = (h ^ (unsigned char)*f) * 16777619u;
    h ^= (uint32_t)first * 0x9e3779b1u;
    h ^= (uint32_t)line * 0x85ebca77u;
    return h ^ (h >> 15);
}

/* Copy s (cut at NAME_MAX_LEN) into the pool; its offset, or UINT32_MAX when full. */
static uint32_t
pool_put(const char *s)
{
    size_t n = strnlen(s, NAME_MAX_LEN);
    uint32_t off = pool_used;

    if (n + 1 > PE_PYNAMES_POOL - pool_used)
        return UINT32_MAX;
    memcpy(pool + off, s, n);
    pool[off + n] = '\0';
    pool_used += (uint32_t)n + 1;
    return off;
}

/* A fork child: the lock may be held by a thread the child does not have. */
static void
atfork_child(void)
{
    pthread_mutex_init(&lock, NULL);
}

static void
register_atfork(void)
{
    pthread_atfork(NULL, NULL, atfork_child);
}

/* First use (lock held): map everything at once.  0, or -1 when out of memory. */
static int
setup(void)
{
    size_t len = PE_PYNAMES_MAX * sizeof(entry_t) + NSLOTS * sizeof(uint32_t) + PE_PYNAMES_POOL;
    char *m;

    if (entries)
        return 0;
    /* untouched pages cost nothing until used */
    m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    entries = (entry_t *)m;
    slots = (uint32_t *)(m + PE_PYNAMES_MAX * sizeof(entry_t));
    pool = m + PE_PYNAMES_MAX * sizeof(entry_t) + NSLOTS * sizeof(uint32_t);
    entries[0].qual = pool_put("<python>");
    entries[0].file = pool_put("");
    nentries = 1;
    return 0;
}

uint64_t
pe_pynames_add(const char *qualname, const char *filename, int32_t firstlineno, int32_t line)
{
    char q[NAME_MAX_LEN + 1], f[NAME_MAX_LEN + 1];
    uint32_t h, idx, i = 0;

    /* compare what would be stored: the cut strings */
    strncpy(q, qualname ? qualname : "", NAME_MAX_LEN);
    q[NAME_MAX_LEN] = '\0';
    strncpy(f, filename ? filename : "", NAME_MAX_LEN);
    f[NAME_MAX_LEN] = '\0';
    pthread_once(&once, register_atfork);
    pthread_mutex_lock(&lock);
    if (setup() < 0)
        goto out;
    h = hash_names(q, f, firstlineno, line) & (NSLOTS - 1);
    while ((idx = slots[h]) != 0) {
        entry_t *e = &entries[idx - 1];
        if (e->first == firstlineno && e->line == line && !strcmp(pool + e->qual, q) &&
            !strcmp(pool + e->file, f)) {
            i = idx - 1;
            goto out;
        }
        h = (h + 1) & (NSLOTS - 1);
    }
    if (nentries < PE_PYNAMES_MAX) {
        uint32_t save = pool_used, qo = pool_put(q), fo = pool_put(f);

        if (qo == UINT32_MAX || fo == UINT32_MAX) {
            pool_used = save; /* full: entry 0 */
            goto out;
        }
        i = nentries;
        entries[i] = (entry_t){qo, fo, firstlineno, line};
        nentries++;
        slots[h] = i + 1;
    }
out:
    pthread_mutex_unlock(&lock);
    return PE_PY_NAMED_TAG(i);
}

void
pe_pynames_get(uint64_t tag, pe_pyname_t *out)
{
    uint32_t i = PE_PY_IS_NAMED(tag) ? (uint32_t)tag : 0;

    pthread_once(&once, register_atfork);
    pthread_mutex_lock(&lock);
    if (setup() < 0 || i >= nentries)
        i = 0;
    if (entries) {
        out->qualname = pool + entries[i].qual;
        out->filename = pool + entries[i].file;
        out->firstlineno = entries[i].first;
        out->line = entries[i].line;
    } else {
        *out = (pe_pyname_t){"<python>", "", 0, 0};
    }
    pthread_mutex_unlock(&lock);
}

uint32_t
pe_pynames_count(void)
{
    uint32_t n;

    pthread_mutex_lock(&lock);
    n = nentries;
    pthread_mutex_unlock(&lock);
    return n;
}
