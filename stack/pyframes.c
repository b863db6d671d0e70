/*
 * pyframes.c: CPython frames, read from raw memory (pyframes.h says what and
 * when).  The layouts below are CPython's, per minor version, taken from its
 * Include/internal headers and checked by test/unit/u_pyframes.c; the walk itself
 * (runtime -> interpreters -> thread states -> cframe -> frames) is the same
 * for every version listed.
 *
 * Every read is process_vm_readv on our own pid, so a bad pointer costs a
 * failed read, never a fault.  Syscalls are the cost, so they are few: the
 * thread state is found from a per-thread hint (one read to confirm it), and
 * frames are read a page at a time: the page that holds a frame, up to its
 * end, lands in a window buffer from which the frames below it in the same
 * page (CPython 3.11 keeps a thread's frames contiguous in its data stack) are
 * taken without another read.  Window buffers come from a small pool claimed
 * with an atomic exchange (a handler must not use 4 KiB of the interrupted
 * thread's stack); with none free, each frame is read on its own.  The pid
 * is cached (reset in fork children).
 *
 * Signal-safe: pe_py_interleave and what it calls (marked PE_SIGSAFE).
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../preload/clock.h"
#include "../preload/guard.h"
#include "../preload/log.h"
#include "../symbols/pynames.h"
#include "pyframes.h"

/* CPython 3.11 (Include/internal/pycore_frame.h, pycore_interp.h, pycore_runtime.h,
   cpython/pystate.h, cpython/code.h, cpython/unicodeobject.h). */
const pe_py_layout_t pe_py_layout_311 = {
    .hex_min = 0x030b0000u,
    .hex_max = 0x030bffffu,
    .rt_interp_head = 40,
    .is_next = 0,
    .is_threads_head = 16,
    .ts_next = 8,
    .ts_cframe = 56,
    .ts_native_tid = 160,
    .cf_current = 8,
    .fr_code = 32,
    .fr_previous = 48,
    .fr_prev_instr = 56,
    .fr_is_entry = 68,
    .fr_owner = 69,
    .owner_cstack = PE_PY_NO_OWNER,
    .co_firstlineno = 72,
    .co_filename = 112,
    .co_qualname = 128,
    .co_linetable = 136,
    .co_code = 184,
    .ob_type = 8,
    .ob_size = 16,
    .bytes_sval = 32,
    .str_length = 16,
    .str_state = 32,
    .ascii_size = 48,
    .utf8_length = 48,
    .utf8 = 56,
    .compact_size = 72,
};

/* CPython 3.12: the same headers; frames start with f_code, the unicode
   objects lost wstr, and the entry of each eval call is a C-stack shim frame. */
const pe_py_layout_t pe_py_layout_312 = {
    .hex_min = 0x030c0000u,
    .hex_max = 0x030cffffu,
    .rt_interp_head = 40,
    .is_next = 0,
    .is_threads_head = 72,
    .ts_next = 8,
    .ts_cframe = 56,
    .ts_native_tid = 144,
    .cf_current = 0,
    .fr_code = 0,
    .fr_previous = 8,
    .fr_prev_instr = 56,
    .fr_is_entry = PE_PY_NO_FIELD,
    .fr_owner = 70,
    .owner_cstack = 3,
    .co_firstlineno = 68,
    .co_filename = 112,
    .co_qualname = 128,
    .co_linetable = 136,
    .co_code = 192,
    .ob_type = 8,
    .ob_size = 16,
    .bytes_sval = 32,
    .str_length = 16,
    .str_state = 32,
    .ascii_size = 40,
    .utf8_length = 40,
    .utf8 = 48,
    .compact_size = 56,
};

static const pe_py_layout_t *const layouts[] = {&pe_py_layout_311, &pe_py_layout_312};

#define TS_READ 168   /* bytes of PyThreadState read: up to native_thread_id */
#define FRAME_READ 72 /* bytes of _PyInterpreterFrame read: up to owner */
#define CODE_READ 144 /* bytes of PyCodeObject read: up to co_linetable */
#define MAX_INTERPS 16
#define NAME_CACHE 4096
#define LINETAB_MAX (64 * 1024)
#define STR_MAX 256
#define PAGE 4096
/* A name confirmed this recently is reused without reading the code object
   again: no wider than the drain period that already separates sample and
   naming, and it saves a read per frame in deep recursions. */
#define RECHECK_NS (10 * 1000000LL)
#define NWIN 32 /* window buffers: concurrent captures that read a page at a time */

/* Written once by init (before `active` is published), then read only. */
static const pe_py_layout_t *L;
static uintptr_t runtime, code_type, unicode_type, eval_lo, eval_hi;
static int active;
static char version[16];
/* What pe_py_note says: found, or why native frames only ("" for no CPython). */
static char note[160];
static pid_t self_pid;
static unsigned char (*wins)[PAGE + FRAME_READ]; /* [NWIN], mmap'd by init */
static int win_busy[NWIN];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The thread state of this thread last time (a hint, checked before use), and
   how many samples found none: a thread without one (a C thread of a Python
   program) walks the thread list on one sample in 16 only. */
static __thread uintptr_t tls_tstate;
static __thread uint32_t tls_misses;
/* The same hints for other threads (quiet captures), by tid; a miss is
   remembered for a second.  Under tid_lock. */
#define TID_CACHE 1024
static pthread_mutex_t tid_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    pid_t tid;
    uintptr_t ts;
    int64_t miss_ns;
} tid_cache[TID_CACHE];

/* ---- raw reads ---------------------------------------------------------------------- */

PE_SIGSAFE static int
rd(pid_t pid, uintptr_t addr, void *buf, size_t len)
{
    struct iovec l = {buf, len}, r = {(void *)addr, len};

    if (!addr || addr + len < addr)
        return -1;
    return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

PE_SIGSAFE static uintptr_t
ld(const unsigned char *b, unsigned off)
{
    uintptr_t v;

    memcpy(&v, b + off, sizeof(v));
    return v;
}

/* ---- the walk ----------------------------------------------------------------------- */

/*
 * Thread state whose native_thread_id is tid (the hint first; the list only
 * when `walk`), and its cframe; 0 if none.
 */
PE_SIGSAFE static uintptr_t
find_tstate(pid_t pid, pid_t tid, uintptr_t hint, int walk, uintptr_t *cframe)
{
    unsigned char ts[TS_READ];
    uintptr_t interp, t;

    if (hint && rd(pid, hint, ts, sizeof(ts)) == 0 && (pid_t)ld(ts, L->ts_native_tid) == tid) {
        *cframe = ld(ts, L->ts_cframe);
        return hint;
    }
    if (!walk || rd(pid, runtime + L->rt_interp_head, &interp, sizeof(interp)))
        return 0;
    for (int ni = 0; interp && ni < MAX_INTERPS; ni++) {
        if (rd(pid, interp + L->is_threads_head, &t, sizeof(t)))
            return 0;
        for (int k = 0; t && k < PE_PY_MAX_THREADS; k++) {
            if (rd(pid, t, ts, sizeof(ts)))
                break;
            if ((pid_t)ld(ts, L->ts_native_tid) == tid) {
                *cframe = ld(ts, L->ts_cframe);
                return t;
            }
            t = ld(ts, L->ts_next);
        }
        if (rd(pid, interp + L->is_next, &interp, sizeof(interp)))
            return 0;
    }
    return 0;
}

PE_SIGSAFE static int
win_claim(void)
{
    for (int i = 0; wins && i < NWIN; i++)
        if (!__atomic_load_n(&win_busy[i], __ATOMIC_RELAXED) &&
            !__atomic_exchange_n(&win_busy[i], 1, __ATOMIC_ACQUIRE))
            return i;
    return -1;
}

/*
 * Frame f's first FRAME_READ bytes into fr: from the window [*lo, *lo + *len)
 * when it holds them, else by reading f's page up to f + FRAME_READ into the
 * window (w >= 0), else by one small read.  0 or -1.
 */
PE_SIGSAFE static int
read_frame(pid_t pid, uintptr_t f, unsigned char *fr, int w, uintptr_t *lo, size_t *len)
{
    if (w >= 0) {
        if (!(f >= *lo && f + FRAME_READ <= *lo + *len)) {
            uintptr_t p = f & ~(uintptr_t)(PAGE - 1);

            *len = 0;
            if (rd(pid, p, wins[w], f + FRAME_READ - p) == 0) {
                *lo = p;
                *len = f + FRAME_READ - p;
            }
        }
        if (f >= *lo && f + FRAME_READ <= *lo + *len) {
            memcpy(fr, wins[w] + (f - *lo), FRAME_READ);
            return 0;
        }
    }
    return rd(pid, f, fr, FRAME_READ);
}

/* The chain from cframe->current_frame, leaf first, as RAW tags; entry[i]: frame i is_entry. */
PE_SIGSAFE static int
read_chain(pid_t pid, uintptr_t cframe, uintptr_t *py, uint8_t *entry, int max)
{
    unsigned char fr[FRAME_READ];
    uintptr_t f, code, prev, first, wlo = 0;
    size_t wlen = 0;
    int np = 0, w;

    if (!cframe || rd(pid, cframe + L->cf_current, &f, sizeof(f)))
        return 0;
    w = win_claim();
    /* (a bound on shims too: a corrupt chain may loop) */
    for (int steps = 0;
         f && np < max && steps < 2 * max && read_frame(pid, f, fr, w, &wlo, &wlen) == 0; steps++) {
        code = ld(fr, L->fr_code);
        prev = ld(fr, L->fr_prev_instr);
        if (!code)
            break;
        if (fr[L->fr_owner] == L->owner_cstack) {
            /* 3.12's shim: the frame above it was the first of its eval call */
            if (np)
                entry[np - 1] = 1;
            f = ld(fr, L->fr_previous);
            continue;
        }
        first = code + L->co_code;
        py[np] = PE_PY_RAW(code, prev > first ? (prev - first) / 2 : 0);
        entry[np] = L->fr_is_entry != PE_PY_NO_FIELD && fr[L->fr_is_entry] != 0;
        np++;
        f = ld(fr, L->fr_previous);
    }
    if (w >= 0)
        __atomic_store_n(&win_busy[w], 0, __ATOMIC_RELEASE);
    return np;
}

/*
 * pcs[0..n) native, leaf first: before each native _PyEval_EvalFrameDefault
 * frame go the Python frames it runs (up to and including an entry frame);
 * what is left goes at the outer end.
 */
PE_SIGSAFE static int
merge(uintptr_t *pcs, int n, int max, const uintptr_t *py, const uint8_t *entry, int np)
{
    uintptr_t nat[PE_MAX_FRAMES + 16];
    int o = 0, k = 0;

    if (n > (int)(sizeof(nat) / sizeof(nat[0])))
        n = (int)(sizeof(nat) / sizeof(nat[0]));
    memcpy(nat, pcs, (size_t)n * sizeof(nat[0]));
    for (int i = 0; i < n && o < max; i++) {
        uintptr_t a = i ? nat[i] - 1 : nat[i]; /* return addresses: the call site */

        if (a >= eval_lo && a < eval_hi)
            while (k < np && o < max)
                if (pcs[o++] = py[k], entry[k++])
                    break;
        if (o < max)
            pcs[o++] = nat[i];
    }
    while (k < np && o < max)
        pcs[o++] = py[k++];
    return o;
}

PE_SIGSAFE static int
interleave(pid_t pid, pid_t tid, uintptr_t *hint, int walk, uintptr_t *pcs, int n, int max)
{
    uintptr_t py[PE_PY_MAX_FRAMES], cframe = 0, ts;
    uint8_t entry[PE_PY_MAX_FRAMES];
    int np;

    ts = find_tstate(pid, tid, *hint, walk, &cframe);
    *hint = ts;
    if (!ts)
        return n;
    np = read_chain(pid, cframe, py, entry, PE_PY_MAX_FRAMES);
    return np ? merge(pcs, n, max, py, entry, np) : n;
}

PE_SIGSAFE int
pe_py_interleave(uintptr_t *pcs, int n, int max)
{
    if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE) || n < 0)
        return n;
    int walk = tls_tstate || tls_misses % 16 == 0;

    n = interleave(self_pid, pe_gettid(), &tls_tstate, walk, pcs, n, max);
    tls_misses = tls_tstate ? 0 : tls_misses + 1;
    return n;
}

int
pe_py_interleave_tid(pid_t tid, uintptr_t *pcs, int n, int max)
{
    unsigned h = (unsigned)tid % TID_CACHE;
    uintptr_t hint = 0;
    int64_t t;
    int walk = 1;

    if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE) || n < 0)
        return n;
    t = pe_clock_ns(CLOCK_MONOTONIC_COARSE);
    pthread_mutex_lock(&tid_lock);
    if (tid_cache[h].tid == tid) {
        hint = tid_cache[h].ts;
        walk = hint || t - tid_cache[h].miss_ns > 1000000000;
    }
    pthread_mutex_unlock(&tid_lock);
    n = interleave(self_pid, tid, &hint, walk, pcs, n, max);
    pthread_mutex_lock(&tid_lock);
    if (hint || walk) {
        tid_cache[h].tid = tid;
        tid_cache[h].ts = hint;
        tid_cache[h].miss_ns = hint ? 0 : t;
    }
    pthread_mutex_unlock(&tid_lock);
    return n;
}

/* ---- names (collector) ---------------------------------------------------------------- */

static int
varint(const unsigned char *t, size_t len, size_t *p, uint32_t *out)
{
    uint32_t v = 0;
    unsigned shift = 0, b;

    do {
        if (*p >= len || shift > 30)
            return -1;
        b = t[(*p)++];
        v |= (uint32_t)(b & 63) << shift;
        shift += 6;
    } while (b & 64);
    *out = v;
    return 0;
}

int
pe_py_line311(const unsigned char *tab, size_t len, int firstlineno, uint32_t idx)
{
    size_t p = 0;
    uint32_t addr = 0, v, skip;
    int line = firstlineno;

    while (p < len) {
        unsigned b = tab[p++], code = (b >> 3) & 15, units = (b & 7) + 1;
        int has = 1;

        if (!(b & 0x80))
            return -1; /* not the first byte of an entry */
        switch (code) {
        case 15: /* no location */ has = 0; break;
        case 14: /* long form: line delta, end line, column, end column */
        case 13: /* no column: line delta */
            if (varint(tab, len, &p, &v))
                return -1;
            line += (v & 1) ? -(int)(v >> 1) : (int)(v >> 1);
            for (int i = 0; code == 14 && i < 3; i++)
                if (varint(tab, len, &p, &skip))
                    return -1;
            break;
        case 10:
        case 11:
        case 12: /* one-line forms: the delta is in the code; two column bytes */
            line += (int)code - 10;
            p += 2;
            break;
        default: /* short forms: same line, one column byte */ p += 1; break;
        }
        if (idx < addr + units)
            return has ? line : -1;
        addr += units;
    }
    return -1;
}

/* Append code point c as UTF-8 to out[*o..cap-1). */
static void
put_utf8(char *out, size_t cap, size_t *o, uint32_t c)
{
    char b[4];
    size_t n;

    if (c < 0x80) {
        b[0] = (char)c, n = 1;
    } else if (c < 0x800) {
        b[0] = (char)(0xc0 | c >> 6), b[1] = (char)(0x80 | (c & 63)), n = 2;
    } else if (c < 0x10000) {
        b[0] = (char)(0xe0 | c >> 12), b[1] = (char)(0x80 | ((c >> 6) & 63));
        b[2] = (char)(0x80 | (c & 63)), n = 3;
    } else {
        b[0] = (char)(0xf0 | (c >> 18 & 7)), b[1] = (char)(0x80 | ((c >> 12) & 63));
        b[2] = (char)(0x80 | ((c >> 6) & 63)), b[3] = (char)(0x80 | (c & 63)), n = 4;
    }
    if (*o + n < cap) {
        memcpy(out + *o, b, n);
        *o += n;
    }
}

/* A str object's text as UTF-8 (cut at cap-1 bytes, on a character boundary).  0 or -1. */
static int
read_str(pid_t pid, uintptr_t obj, char *out, size_t cap)
{
    unsigned char h[80], raw[STR_MAX * 4];
    uintptr_t len, data;
    unsigned state, kind;
    size_t o = 0, n;

    out[0] = '\0';
    if (rd(pid, obj, h, L->ascii_size) || ld(h, L->ob_type) != unicode_type)
        return -1;
    len = ld(h, L->str_length);
    state = h[L->str_state];
    kind = (state >> 2) & 7;
    if (!(state & 0x20)) /* not compact: never for code objects' names */
        return -1;
    if (state & 0x40) { /* ASCII: the text follows the header */
        n = len < cap - 1 ? len : cap - 1;
        if (n && rd(pid, obj + L->ascii_size, out, n))
            return -1;
        out[n] = '\0';
        return 0;
    }
    if (rd(pid, obj + L->ascii_size, h + L->ascii_size, L->compact_size - L->ascii_size))
        return -1;
    if ((data = ld(h, L->utf8)) != 0) { /* its UTF-8 form exists already */
        n = ld(h, L->utf8_length);
        n = n < cap - 1 ? n : cap - 1;
        if (n && rd(pid, data, out, n))
            return -1;
        while (n > 0 && ((unsigned char)out[n] & 0xc0) == 0x80 && n < ld(h, L->utf8_length))
            n--; /* do not end inside a character */
        out[n] = '\0';
        return 0;
    }
    if (kind != 1 && kind != 2 && kind != 4)
        return -1;
    n = len < STR_MAX ? len : STR_MAX;
    if (n && rd(pid, obj + L->compact_size, raw, n * kind))
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = kind == 1   ? raw[i]
                     : kind == 2 ? (uint32_t)raw[2 * i] | raw[2 * i + 1] << 8
                                 : (uint32_t)raw[4 * i] | raw[4 * i + 1] << 8 |
                                       raw[4 * i + 2] << 16 | (uint32_t)raw[4 * i + 3] << 24;
        put_utf8(out, cap, &o, c);
    }
    out[o] = '\0';
    return 0;
}

static pthread_mutex_t name_lock = PTHREAD_MUTEX_INITIALIZER;
/* (code, idx) -> NAMED tag, direct-mapped; valid while qualname, filename
   and first line match.  Mapped at the first Python frame named (under
   name_lock): 256 KiB that a program without Python, under `ulimit -v`,
   keeps for itself. */
typedef struct {
    uintptr_t code, qual, file;
    uint32_t idx;
    int32_t first;
    uint64_t tag;
    int64_t checked; /* CLOCK_MONOTONIC_COARSE ns of the last read that confirmed it */
} name_slot_t;
static struct {
    name_slot_t cache[NAME_CACHE];
    unsigned char linetab[LINETAB_MAX];
} * names;

static uint64_t
name_one(pid_t pid, uintptr_t raw)
{
    unsigned char co[CODE_READ];
    char q[STR_MAX], f[STR_MAX];
    uintptr_t code = PE_PY_RAW_CODE(raw), qual, file, lt, ltlen;
    uint32_t idx = PE_PY_RAW_IDX(raw), h;
    int32_t first;
    int line;
    uint64_t tag;
    int64_t now = pe_clock_ns(CLOCK_MONOTONIC_COARSE);
    name_slot_t *cache;
    unsigned char *linetab;

    if (!names) {
        void *m =
            mmap(NULL, sizeof(*names), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (m == MAP_FAILED)
            return PE_PY_NAMED_TAG(0);
        names = m;
    }
    cache = names->cache;
    linetab = names->linetab;
    h = (uint32_t)(((code >> 4) ^ (code >> 16)) * 0x9e3779b1u ^ idx * 0x85ebca77u) % NAME_CACHE;
    if (cache[h].code == code && cache[h].idx == idx && now - cache[h].checked < RECHECK_NS)
        return cache[h].tag;
    if (rd(pid, code, co, sizeof(co)) || ld(co, L->ob_type) != code_type)
        return PE_PY_NAMED_TAG(0); /* gone already */
    qual = ld(co, L->co_qualname);
    file = ld(co, L->co_filename);
    memcpy(&first, co + L->co_firstlineno, sizeof(first));
    if (cache[h].code == code && cache[h].idx == idx && cache[h].qual == qual &&
        cache[h].file == file && cache[h].first == first) {
        cache[h].checked = now;
        return cache[h].tag;
    }
    if (read_str(pid, qual, q, sizeof(q)))
        snprintf(q, sizeof(q), "<code 0x%lx>", (unsigned long)code);
    if (read_str(pid, file, f, sizeof(f)))
        f[0] = '\0';
    line = -1;
    lt = ld(co, L->co_linetable);
    if (lt && rd(pid, lt + L->ob_size, &ltlen, sizeof(ltlen)) == 0) {
        if (ltlen > LINETAB_MAX)
            ltlen = LINETAB_MAX;
        if (rd(pid, lt + L->bytes_sval, linetab, ltlen) == 0)
            line = pe_py_line311(linetab, ltlen, first, idx);
    }
    tag = pe_pynames_add(q, f, first, line >= 0 ? line : first);
    cache[h].code = code;
    cache[h].idx = idx;
    cache[h].qual = qual;
    cache[h].file = file;
    cache[h].first = first;
    cache[h].tag = tag;
    cache[h].checked = now;
    return tag;
}

void
pe_py_name_pcs(uintptr_t *pcs, int n)
{
    pid_t pid;
    int locked = 0;

    for (int i = 0; i < n; i++) {
        if (!PE_PY_IS_RAW(pcs[i]))
            continue;
        if (!locked) {
            if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE))
                return;
            pthread_mutex_lock(&name_lock);
            locked = 1;
        }
        pid = self_pid;
        pcs[i] = (uintptr_t)name_one(pid, pcs[i]);
    }
    if (locked)
        pthread_mutex_unlock(&name_lock);
}

/* ---- setup ------------------------------------------------------------------------------- */

static void
atfork_child(void)
{
    self_pid = getpid();
    memset(win_busy, 0, sizeof(win_busy)); /* claimed by threads the child does not have */
    /* held, maybe, by a thread the child does not have (a prefork server forks
       while the collector names frames) */
    pthread_mutex_init(&name_lock, NULL);
    pthread_mutex_init(&tid_lock, NULL);
}

static void
init_once(void)
{
    void *rt = dlsym(RTLD_DEFAULT, "_PyRuntime"), *eval, *ver;
    const ElfW(Sym) *sym = NULL;
    unsigned long hex = 0;
    Dl_info info;
    uintptr_t probe;

    if (!rt)
        return;                              /* not CPython (or a CPython that hides its runtime) */
    ver = dlsym(RTLD_DEFAULT, "Py_Version"); /* 3.11 and later */
    if (ver)
        memcpy(&hex, ver, sizeof(hex));
    if (hex)
        snprintf(version, sizeof(version), "%lu.%lu.%lu", hex >> 24 & 255, hex >> 16 & 255,
                 hex >> 8 & 255);
    for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
        if (hex >= layouts[i]->hex_min && hex <= layouts[i]->hex_max)
            L = layouts[i];
    if (!L) {
        snprintf(note, sizeof(note),
                 "python: CPython %s has no known frame layout (we know 3.11, 3.12): native "
                 "frames only",
                 hex ? version : "older than 3.11");
        return;
    }
    eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
    unicode_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    if (!eval || !code_type || !unicode_type ||
        !dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size) {
        snprintf(note, sizeof(note),
                 "python: CPython %s without the symbols we need: native frames only", version);
        return;
    }
    runtime = (uintptr_t)rt;
    eval_lo = (uintptr_t)eval;
    eval_hi = eval_lo + sym->st_size;
    self_pid = getpid();
    pthread_atfork(NULL, NULL, atfork_child);
    if (rd(self_pid, runtime, &probe, sizeof(probe))) {
        snprintf(note, sizeof(note),
                 "python: CPython %s, process_vm_readv on ourselves fails: native frames only",
                 version);
        return;
    }
    {
        void *m = mmap(NULL, NWIN * sizeof(wins[0]), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        wins = m == MAP_FAILED ? NULL : m; /* without: a read per frame */
    }
    /* In the profiles' comments and the index page, not on stderr: the
       program's stderr gets our one "serving" line and nothing else. */
    snprintf(note, sizeof(note), "python: CPython %s, Python frames in every stack", version);
    __atomic_store_n(&active, 1, __ATOMIC_RELEASE);
}

void
pe_py_init(void)
{
    pthread_once(&once, init_once);
}

int
pe_py_active(void)
{
    return __atomic_load_n(&active, __ATOMIC_ACQUIRE);
}

const char *
pe_py_note(void)
{
    return note;
}
