/*
 * jitmap.c: names for JIT code, from the runtime's own maps.
 *
 *   /tmp/perf-PID.map  lines "START SIZE NAME" (hex, no 0x needed), written by
 *                      node --perf-basic-prof, python -X perf, the JVM's
 *                      Compiler.perfmap, LuaJIT tools.
 *   jit-PID.dump       jitdump (JIT_CODE_LOAD records), when the program maps
 *                      it (that mapping is how perf finds it too).
 *
 * Contract:
 *  - Incremental: each refresh reads only the bytes appended since the last
 *    one; a partial last line waits for its newline.  A file that shrank or
 *    was replaced (other inode) is indexed again from its start.
 *  - The newest entry covering an address names it (code moved or freed and
 *    its range reused is re-announced by a later line).
 *  - Bounded memory: at most PE_JIT_MAX_ENTRIES index entries of 24 bytes;
 *    names are not kept but read back (pread) for the addresses a profile
 *    resolves, into a per-batch buffer freed by pe_sym_jit_end.
 *  - Server side only: called from symbolize.c's batch, under its lock; never
 *    from a signal handler.
 *  - Ignored: a file that is not regular, not owned by our uid (/tmp is
 *    shared), or last written before this process started (a previous
 *    process with the same pid left it).
 *
 * Signal-safe: no.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../preload/clock.h"
#include "../preload/fd.h"
#include "../preload/log.h"
#include "../preload/proc.h"
#include "symbols.h"

/* 2^21 entries: 48 MiB at most (a node service has a few thousand). */
#define PE_JIT_MAX_ENTRIES (1u << 21)
#define NAME_MAX_LEN 512
#define CHUNK (1u << 20)
/* New entries merged into the index this many at a time (1.5 MiB) */
#define BATCH_MAX 65536
/* How far back a lookup looks for an older, longer entry covering addr. */
#define LOOKBACK 64

/* Where perf maps live (a variable so tests can use a directory of their own). */
const char *pe_sym_jit_dir = "/tmp";

typedef struct ent_s {
    uint64_t start;
    uint64_t off; /* bits 0..46 name offset in its file, 47 = jitdump, 48..63 name length */
    uint32_t size;
    uint32_t seq; /* arrival order: higher wins */
} ent_t;

#define OFF_MASK ((UINT64_C(1) << 47) - 1)
#define OFF_DUMP (UINT64_C(1) << 47)

typedef struct src_s {
    int fd;
    dev_t dev;
    ino_t ino;
    uint64_t done; /* bytes indexed */
} src_t;

static struct {
    pid_t pid;
    time_t start_time; /* process start, seconds since the epoch */
    src_t map, dump;
    ent_t *ents; /* sorted by start, one entry per start (newest) */
    size_t n, cap;
    uint32_t seq, max_size;
    uint64_t malformed, dropped;
    int full_logged;
    int64_t last_ms; /* last refresh, CLOCK_MONOTONIC */
    /* per-batch names: a chain of blocks, freed by pe_sym_jit_end */
    struct nblk_s {
        struct nblk_s *next;
        size_t used;
        char buf[16384];
    } * names;
} jm = {.map.fd = -1, .dump.fd = -1};

/* ---- sources ----------------------------------------------------------------------- */

static time_t
process_start_time(void)
{
    pe_proc_stat_t st;

    return pe_proc_stat(0, 0, &st) == 0 ? (time_t)pe_proc_started(st.starttime) : 0;
}

static void
src_close(src_t *s)
{
    if (s->fd >= 0)
        close(s->fd);
    memset(s, 0, sizeof(*s));
    s->fd = -1;
}

static void
index_clear(void)
{
    free(jm.ents);
    jm.ents = NULL;
    jm.n = jm.cap = 0;
    jm.max_size = 0;
    src_close(&jm.map);
    src_close(&jm.dump);
}

/*
 * Open path as source s (or keep it open).  Returns 1 when s is usable, 0 when
 * the file is absent or refused.  A replaced or shrunk file clears the whole
 * index (entries from both files: simpler, and it happens at most at a restart
 * of the runtime's logging).
 */
static int
src_open(src_t *s, const char *path)
{
    struct stat st;
    int fd;

    fd = pe_fd_open_high(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK); /* (preload/fd.h) */
    if (fd < 0) {
        if (s->fd >= 0)
            index_clear();
        return 0;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (jm.start_time && st.st_mtime + 1 < jm.start_time)) {
        close(fd);
        return 0;
    }
    if (s->fd >= 0 &&
        (s->dev != st.st_dev || s->ino != st.st_ino || (uint64_t)st.st_size < s->done))
        index_clear();
    if (s->fd >= 0) {
        close(fd);
        return 1;
    }
    s->fd = fd;
    s->dev = st.st_dev;
    s->ino = st.st_ino;
    s->done = 0;
    return 1;
}

/* ---- the index ---------------------------------------------------------------------- */

static int
ent_cmp(const void *a, const void *b)
{
    const ent_t *x = a, *y = b;

    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Merge new entries into the index, in place from the back (the index grows
 * by doubling, so a line appended to a big map costs no copy of it); an equal
 * start keeps the newer entry.
 */
static int
index_merge(ent_t *add, size_t nadd)
{
    size_t i, j, k, lo, w, ncap;
    ent_t *out;

    if (nadd == 0)
        return 0;
    /* runtimes mostly append in address order: then no sort */
    for (i = 1; i < nadd && ent_cmp(&add[i - 1], &add[i]) < 0; i++)
        ;
    if (i < nadd)
        qsort(add, nadd, sizeof(*add), ent_cmp);
    if (jm.n + nadd > jm.cap) {
        ncap = jm.cap ? jm.cap : 1024;
        while (ncap < jm.n + nadd)
            ncap *= 2;
        out = realloc(jm.ents, ncap * sizeof(*out));
        if (!out)
            return -ENOMEM;
        jm.ents = out;
        jm.cap = ncap;
    }
    i = jm.n;
    j = nadd;
    k = jm.n + nadd;
    while (j > 0) {
        if (i > 0 && ent_cmp(&jm.ents[i - 1], &add[j - 1]) > 0)
            jm.ents[--k] = jm.ents[--i];
        else
            jm.ents[--k] = add[--j];
    }
    jm.n += nadd;
    /* below k nothing moved (and it had no duplicates): compact from there */
    lo = k > 0 ? k - 1 : 0;
    for (w = lo, i = lo; i < jm.n; i++) {
        if (w > lo && jm.ents[w - 1].start == jm.ents[i].start)
            jm.ents[w - 1] = jm.ents[i]; /* sorted by seq within a start: newest last */
        else
            jm.ents[w++] = jm.ents[i];
    }
    jm.n = w;
    return 0;
}

typedef struct batch_s {
    ent_t *v;
    size_t n, cap;
} batch_t;

static void
batch_add(batch_t *b, uint64_t start, uint64_t size, uint64_t off, size_t len, uint64_t flag)
{
    if (size == 0 || size > UINT32_MAX || start + size < start || len == 0) {
        jm.malformed++;
        return;
    }
    if (jm.n + b->n >= PE_JIT_MAX_ENTRIES) {
        jm.dropped++;
        if (!jm.full_logged++)
            pe_log_info("jit: more than %u JIT code entries; newer ones are not named",
                        PE_JIT_MAX_ENTRIES);
        return;
    }
    if (b->n == BATCH_MAX) {
        /* merge as we go: a big map never needs a second copy of its index */
        if (index_merge(b->v, b->n) < 0)
            jm.dropped += b->n;
        b->n = 0;
    }
    if (b->n == b->cap) {
        size_t ncap = b->cap ? b->cap * 2 : 1024;
        ent_t *n = realloc(b->v, ncap * sizeof(*n));
        if (!n) {
            jm.dropped++;
            return;
        }
        b->v = n;
        b->cap = ncap;
    }
    if (len > NAME_MAX_LEN)
        len = NAME_MAX_LEN;
    b->v[b->n].start = start;
    b->v[b->n].size = (uint32_t)size;
    b->v[b->n].off = (off & OFF_MASK) | flag | ((uint64_t)len << 48);
    b->v[b->n].seq = ++jm.seq;
    if (size > jm.max_size)
        jm.max_size = (uint32_t)size;
    b->n++;
}

static int
hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Parse "START SIZE NAME" at line[0..len) (no newline); 0 if malformed. */
static int
parse_line(const char *line, size_t len, uint64_t *start, uint64_t *size, size_t *name_at)
{
    uint64_t v[2];
    size_t i = 0;

    for (int f = 0; f < 2; f++) {
        int digits = 0, d;
        v[f] = 0;
        if (i + 1 < len && line[i] == '0' && (line[i + 1] | 0x20) == 'x')
            i += 2;
        for (; i < len && (d = hexval((unsigned char)line[i])) >= 0; i++, digits++) {
            if (v[f] >> 60)
                return 0;
            v[f] = v[f] << 4 | (uint64_t)d;
        }
        if (digits == 0 || i >= len || line[i] != ' ')
            return 0;
        while (i < len && line[i] == ' ')
            i++;
    }
    if (i >= len)
        return 0;
    *start = v[0];
    *size = v[1];
    *name_at = i;
    return 1;
}

/* Index the lines appended to the perf map since the last refresh. */
static void
map_refresh(batch_t *b)
{
    src_t *s = &jm.map;
    char *buf = malloc(CHUNK);

    if (!buf)
        return;
    for (;;) {
        ssize_t r = pread(s->fd, buf, CHUNK, (off_t)s->done);
        size_t at = 0;
        char *nl;

        if (r <= 0)
            break;
        while ((nl = memchr(buf + at, '\n', (size_t)r - at)) != NULL) {
            size_t len = (size_t)(nl - (buf + at)), name_at;
            uint64_t start, size;

            if (parse_line(buf + at, len, &start, &size, &name_at))
                batch_add(b, start, size, s->done + at + name_at, len - name_at, 0);
            else if (len > 0)
                jm.malformed++;
            at += len + 1;
        }
        if (at == 0) {
            /* A line longer than the buffer: skip through its end. */
            if ((size_t)r < CHUNK)
                break; /* incomplete: wait for the rest */
            s->done += (uint64_t)r;
            jm.malformed++;
            continue;
        }
        s->done += at;
        if ((size_t)r < CHUNK)
            break;
    }
    free(buf);
}

/* jitdump: a header, then records {u32 id, u32 total_size, u64 timestamp, ...}. */
#define JITDUMP_MAGIC 0x4A695444u
#define JIT_CODE_LOAD 0
#define JIT_CODE_CLOSE 3

static void
dump_refresh(batch_t *b)
{
    struct {
        uint32_t magic, version, total_size, elf_mach, pad1, pid;
        uint64_t timestamp, flags;
    } hdr;
    struct {
        uint32_t id, total_size;
        uint64_t timestamp;
        uint32_t pid, tid;
        uint64_t vma, code_addr, code_size, code_index;
    } rec;
    src_t *s = &jm.dump;
    char name[NAME_MAX_LEN];

    if (s->done == 0) {
        if (pread(s->fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
            hdr.magic != JITDUMP_MAGIC || hdr.total_size < sizeof(hdr))
            return;
        s->done = hdr.total_size;
    }
    for (;;) {
        ssize_t r = pread(s->fd, &rec, sizeof(rec), (off_t)s->done);
        if (r < 16 || rec.total_size < 16)
            return;
        if (rec.id == JIT_CODE_CLOSE)
            return;
        if (rec.id == JIT_CODE_LOAD) {
            size_t room = rec.total_size - sizeof(rec), len;
            ssize_t got;
            if (r != (ssize_t)sizeof(rec) || rec.total_size < sizeof(rec))
                return;
            got = pread(s->fd, name, room < sizeof(name) ? room : sizeof(name),
                        (off_t)(s->done + sizeof(rec)));
            if (got < 0 || (size_t)got < (room < sizeof(name) ? room : sizeof(name)))
                return; /* record still being written */
            len = strnlen(name, (size_t)got);
            batch_add(b, rec.code_addr, rec.code_size, s->done + sizeof(rec), len, OFF_DUMP);
        } else {
            /* other records: make sure the whole record is there before passing it */
            char c;
            if (pread(s->fd, &c, 1, (off_t)(s->done + rec.total_size - 1)) != 1)
                return;
        }
        s->done += rec.total_size;
    }
}

/* The jitdump file this process maps, from /proc/self/maps ("" if none). */
static void
dump_path(char *out, size_t len)
{
    pe_proc_maps_t it;
    pe_proc_map_t m;
    char want[64];

    out[0] = '\0';
    snprintf(want, sizeof(want), "/jit-%d.dump", (int)jm.pid);
    if (pe_proc_maps_open(&it) < 0)
        return;
    while (pe_proc_maps_entry(&it, &m) > 0) {
        const char *p = m.path;
        size_t n;
        if (p[0] != '/')
            continue;
        n = strlen(p);
        if (n >= strlen(want) && strcmp(p + n - strlen(want), want) == 0) {
            snprintf(out, len, "%s", p);
            break;
        }
    }
    pe_proc_maps_close(&it);
}

/* ---- API (symbols.h) ------------------------------------------------------------------- */

void
pe_sym_jit_begin(void)
{
    char path[4096], dpath[4096];
    batch_t b = {0};
    int64_t now_ms = pe_clock_ns(CLOCK_MONOTONIC) / 1000000;

    /* Some callers symbolize one address per batch: look at the files at
       most every 50 ms. */
    if (jm.pid == getpid() && now_ms - jm.last_ms < 50)
        return;
    jm.last_ms = now_ms;
    if (jm.pid != getpid()) {
        /* first use, or a forked child: its pid names other files */
        index_clear();
        jm.pid = getpid();
        jm.start_time = process_start_time();
    }
    dump_path(dpath, sizeof(dpath));
    if (!dpath[0] && jm.dump.fd >= 0)
        index_clear(); /* unmapped: its code is gone (the perf map is read again) */
    snprintf(path, sizeof(path), "%s/perf-%d.map", pe_sym_jit_dir, (int)jm.pid);
    if (src_open(&jm.map, path))
        map_refresh(&b);
    if (dpath[0] && src_open(&jm.dump, dpath))
        dump_refresh(&b);
    if (index_merge(b.v, b.n) < 0)
        jm.dropped += b.n;
    free(b.v);
}

/* Copy an entry's name into the batch's name blocks. */
static const char *
name_of(const ent_t *e)
{
    size_t len = (size_t)(e->off >> 48);
    const src_t *s = (e->off & OFF_DUMP) ? &jm.dump : &jm.map;
    struct nblk_s *blk = jm.names;
    char *dst;
    ssize_t r;

    if (s->fd < 0 || len == 0)
        return NULL;
    if (!blk || blk->used + len + 1 > sizeof(blk->buf)) {
        blk = malloc(sizeof(*blk));
        if (!blk)
            return NULL;
        blk->next = jm.names;
        blk->used = 0;
        jm.names = blk;
    }
    dst = blk->buf + blk->used;
    r = pread(s->fd, dst, len, (off_t)(e->off & OFF_MASK));
    if (r <= 0)
        return NULL;
    /* jitdump names are NUL-terminated, map names end at the newline: both cut at len */
    dst[r] = '\0';
    while (r > 0 && (dst[r - 1] == '\r' || dst[r - 1] == ' '))
        dst[--r] = '\0';
    if (r == 0)
        return NULL;
    blk->used += (size_t)r + 1;
    return dst;
}

const char *
pe_sym_jit_lookup(uintptr_t addr, uintptr_t *start)
{
    size_t lo = 0, hi = jm.n, mid, k;
    const ent_t *best = NULL;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (jm.ents[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* lo - 1 is the last entry starting at or below addr; an older entry that
       starts lower may still cover addr (and be newer): look a little back. */
    for (k = lo; k > 0 && lo - k < LOOKBACK; k--) {
        const ent_t *e = &jm.ents[k - 1];
        if (addr - e->start >= jm.max_size)
            break;
        if (addr - e->start < e->size && (!best || e->seq > best->seq))
            best = e;
    }
    if (!best)
        return NULL;
    *start = (uintptr_t)best->start;
    return name_of(best);
}

int
pe_sym_jit_found(void)
{
    /* racy by design: a hint's guess, read outside the batch's lock */
    return __atomic_load_n(&jm.map.fd, __ATOMIC_RELAXED) >= 0 ||
           __atomic_load_n(&jm.dump.fd, __ATOMIC_RELAXED) >= 0;
}

void
pe_sym_jit_end(void)
{
    while (jm.names) {
        struct nblk_s *next = jm.names->next;
        free(jm.names);
        jm.names = next;
    }
}

void
pe_sym_jit_stats(size_t *entries, uint64_t *malformed, uint64_t *dropped)
{
    *entries = jm.n;
    *malformed = jm.malformed;
    *dropped = jm.dropped;
}
