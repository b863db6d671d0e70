/*
 * u_jitmap: symbols/jitmap.c on maps written by hand into a directory of our
 * own (pe_sym_jit_dir): lookups, malformed lines, the newest entry winning
 * (same start, and a newer range inside an older one), incremental reads
 * (a partial last line waits for its newline), a truncated map read again,
 * a map older than the process ignored, a mapped jitdump, and a map of 1e6
 * entries (entries bounded; load time printed).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pe_test.h"
#include "symbols/symbols.h"

static char dir[64], path[128];

static void
put(const char *mode, const char *text)
{
    FILE *f = fopen(path, mode);
    if (!f) {
        perror(path);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

/* A refresh: jitmap reads the files at most every 50 ms. */
static void
refresh(void)
{
    usleep(60000);
    pe_sym_jit_begin();
}

/* Name for addr from a fresh batch ("" when none); start into *start. */
static const char *
name(uintptr_t addr, uintptr_t *start)
{
    static char buf[600];
    uintptr_t s = 0;
    const char *n = pe_sym_jit_lookup(addr, &s);

    snprintf(buf, sizeof(buf), "%s", n ? n : "");
    if (start)
        *start = s;
    return buf;
}

/* CPU time: the machine running the tests is often busy, wall time says little */
static double
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void
test_basic(void)
{
    uintptr_t start;
    size_t n;
    uint64_t bad, dropped;

    put("w", "1000 100 first\n"
             "garbage line\n"
             "zz00 10 bad_start\n"
             "3000 0 zero_size\n"
             "4000 10\n"
             "0x2000 0x80 LazyCompile:*second /app/x.js:3:10\n"
             "5000 10 old_five\n"
             "5000 10 new_five\n"
             "6000 1000 outer_old\n"
             "6400 100 inner_new\n");
    refresh();
    CHECK(strcmp(name(0x1000, &start), "first") == 0 && start == 0x1000);
    CHECK(strcmp(name(0x10ff, NULL), "first") == 0);
    CHECK(strcmp(name(0x1100, NULL), "") == 0);
    CHECK(strcmp(name(0x2010, &start), "LazyCompile:*second /app/x.js:3:10") == 0 &&
          start == 0x2000);
    CHECK(strcmp(name(0x5004, NULL), "new_five") == 0);
    CHECK(strcmp(name(0x6450, NULL), "inner_new") == 0);
    CHECK(strcmp(name(0x6010, NULL), "outer_old") == 0);
    CHECK(strcmp(name(0x6900, NULL), "outer_old") == 0);
    CHECK(strcmp(name(0x3000, NULL), "") == 0);
    CHECK(strcmp(name(0x4000, NULL), "") == 0);
    CHECK(strcmp(name(0xfff, NULL), "") == 0);
    pe_sym_jit_stats(&n, &bad, &dropped);
    CHECKF(bad == 4, "malformed %llu", (unsigned long long)bad);
    pe_sym_jit_end();

    /* appended: a partial line is not read until its newline arrives */
    put("a", "7000 10 seven\n8000 10 eig");
    refresh();
    CHECK(strcmp(name(0x7000, NULL), "seven") == 0);
    CHECK(strcmp(name(0x8000, NULL), "") == 0);
    CHECK(strcmp(name(0x1000, NULL), "first") == 0);
    pe_sym_jit_end();
    put("a", "ht\n1000 100 first_again\n");
    refresh();
    CHECK(strcmp(name(0x8000, NULL), "eight") == 0);
    CHECK(strcmp(name(0x1000, NULL), "first_again") == 0);
    pe_sym_jit_end();

    /* truncated and rewritten (a restarted runtime): read from the start */
    put("w", "9000 10 nine\n");
    refresh();
    CHECK(strcmp(name(0x9000, NULL), "nine") == 0);
    CHECK(strcmp(name(0x7000, NULL), "") == 0);
    pe_sym_jit_end();

    /* removed: nothing named */
    unlink(path);
    refresh();
    CHECK(strcmp(name(0x9000, NULL), "") == 0);
    pe_sym_jit_end();
}

static void
test_stale(void)
{
    struct timespec old[2] = {{time(NULL) - 86400, 0}, {time(NULL) - 86400, 0}};

    put("w", "a000 10 left_by_an_older_process\n");
    CHECK(utimensat(AT_FDCWD, path, old, 0) == 0);
    refresh();
    CHECK(strcmp(name(0xa000, NULL), "") == 0);
    pe_sym_jit_end();
    unlink(path);
}

/* A jitdump file, mapped as a runtime maps it (that mapping is how we find it). */
static void
test_jitdump(void)
{
    char dpath[128], rec[256];
    struct {
        uint32_t magic, version, total_size, elf_mach, pad1, pid;
        uint64_t timestamp, flags;
    } hdr = {0x4A695444u, 1, 40, 62, 0, (uint32_t)getpid(), 0, 0};
    struct {
        uint32_t id, total_size;
        uint64_t timestamp;
        uint32_t pid, tid;
        uint64_t vma, code_addr, code_size, code_index;
    } load = {0, 0, 0, (uint32_t)getpid(), (uint32_t)getpid(), 0xb000, 0xb000, 0x40, 1};
    const char *fname = "jitdump_fn";
    size_t rlen;
    void *m;
    int fd;

    snprintf(dpath, sizeof(dpath), "%s/jit-%d.dump", dir, (int)getpid());
    fd = open(dpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    rlen = sizeof(load) + strlen(fname) + 1 + 4; /* + 4 bytes of "code" */
    load.total_size = (uint32_t)rlen;
    memset(rec, 0x90, sizeof(rec));
    memcpy(rec, &load, sizeof(load));
    memcpy(rec + sizeof(load), fname, strlen(fname) + 1);
    CHECK(write(fd, &hdr, sizeof(hdr)) == (ssize_t)sizeof(hdr));
    CHECK(write(fd, rec, rlen) == (ssize_t)rlen);
    m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    CHECK(m != MAP_FAILED);
    refresh();
    CHECK(strcmp(name(0xb010, NULL), "jitdump_fn") == 0);
    CHECK(strcmp(name(0xb040, NULL), "") == 0);
    pe_sym_jit_end();
    if (m != MAP_FAILED)
        munmap(m, 4096);
    close(fd);
    unlink(dpath);
}

static void
test_huge(void)
{
    const long N = 1000000;
    FILE *f = fopen(path, "w");
    double t0, t1, t2;
    size_t n;
    uint64_t bad, dropped;

    if (!f)
        return;
    for (long i = 0; i < N; i++)
        fprintf(f, "%lx 40 LazyCompile:~filler_%ld big.js:1\n",
                0x100000000000ul + (unsigned long)i * 0x40, i);
    fclose(f);
    usleep(60000);
    t0 = now_ms();
    pe_sym_jit_begin();
    t1 = now_ms();
    CHECK(strcmp(name(0x100000000000ul + 123456ul * 0x40 + 8, NULL),
                 "LazyCompile:~filler_123456 big.js:1") == 0);
    pe_sym_jit_end();
    put("a", "c000 10 after_the_million\n");
    usleep(60000);
    t2 = now_ms();
    pe_sym_jit_begin();
    t2 = now_ms() - t2;
    CHECK(strcmp(name(0xc000, NULL), "after_the_million") == 0);
    pe_sym_jit_end();
    pe_sym_jit_stats(&n, &bad, &dropped);
    CHECKF(n == (size_t)N + 1, "entries %zu", n);
    /* the index is 24 bytes an entry; names stay in the file */
    printf("1e6-entry map: first load %.0f ms CPU, one appended line %.2f ms CPU, index %.1f MiB\n",
           t1 - t0, t2, (double)n * 24 / 1048576);
    unlink(path);
}

int
main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/pe-u-jitmap.XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    pe_sym_jit_dir = dir;
    snprintf(path, sizeof(path), "%s/perf-%d.map", dir, (int)getpid());
    test_basic();
    test_stale();
    test_jitdump();
    test_huge();
    rmdir(dir);
    return pe_test_done();
}
