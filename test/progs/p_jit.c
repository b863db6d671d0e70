/*
 * p_jit: JIT-like code for e2e_jit.sh.  Hand-assembled functions in mmap'ed
 * executable pages (no ELF, no CFI), named only by a perf map this program
 * writes to /tmp/perf-PID.map as a runtime would, with the unwinder's edge
 * cases:
 *   jit_leaf_loop     a frame-pointer leaf that burns CPU in JIT code; its map
 *                     line comes after a stale line for the same range
 *                     ("stale_leaf_name", must never show) and two malformed
 *                     lines;
 *   jit_call_fp       a frame-pointer function that calls back into C (burn_a);
 *   jit_big_frame     the same with a 128 KiB frame (libunwind's frame guess
 *                     gives up past 16 KiB: burn_big, and its malloc in
 *                     allocation profiles, must still reach worker_main);
 *   jit_no_frame_pointer  calls burn_cut with garbage in %rbp: those stacks
 *                     are cut, and the profile must count them;
 *   jit_late_appended code created `late` seconds after start, its map line
 *                     appended then (in two writes: a partial line first).
 * Usage: p_jit [late_s [huge_n [garbage]]]   huge_n: write that many unrelated
 * entries first (a big map: the index must stay bounded); garbage: run only
 * jit_garbage_frame, whose frame pointer leads to a fake record (0xdead0000,
 * an address in libc), for the unwinders' never-fault check.  Runs until killed.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef void (*leaf_fn)(long n);
typedef void (*call_fn)(void (*cb)(void));

static const unsigned char leaf_code[] = {
    0x55,             /* push %rbp */
    0x48, 0x89, 0xe5, /* mov %rsp,%rbp */
    0x48, 0x89, 0xf9, /* mov %rdi,%rcx */
    0x48, 0xff, 0xc9, /* 1: dec %rcx */
    0x75, 0xfb,       /* jnz 1b */
    0x5d,             /* pop %rbp */
    0xc3,             /* ret */
};
static const unsigned char call_code[] = {
    0x55,                   /* push %rbp */
    0x48, 0x89, 0xe5,       /* mov %rsp,%rbp */
    0x48, 0x83, 0xec, 0x10, /* sub $16,%rsp */
    0xff, 0xd7,             /* call *%rdi */
    0xc9,                   /* leave */
    0xc3,                   /* ret */
};
static const unsigned char big_code[] = {
    0x55,                                     /* push %rbp */
    0x48, 0x89, 0xe5,                         /* mov %rsp,%rbp */
    0x48, 0x81, 0xec, 0x00, 0x00, 0x02, 0x00, /* sub $0x20000,%rsp */
    0xff, 0xd7,                               /* call *%rdi */
    0xc9,                                     /* leave */
    0xc3,                                     /* ret */
};

/* no frame pointer: rbp holds garbage while it calls back (a stack that must be counted as cut) */
static const unsigned char nofp_code[] = {
    0x55,                         /* push %rbp */
    0xbd, 0x45, 0x23, 0x01, 0x00, /* mov $0x12345,%ebp */
    0x48, 0x83, 0xec, 0x08,       /* sub $8,%rsp (keep the call 16-byte aligned) */
    0xff, 0xd7,                   /* call *%rdi */
    0x48, 0x83, 0xc4, 0x08,       /* add $8,%rsp */
    0x5d,                         /* pop %rbp */
    0xc3,                         /* ret */
};

/* a frame pointer that leads astray: %rbp points at a fake record {0xdead0000,
   an address inside libc} while it calls back; the unwinders must not fault */
static const unsigned char garbage_code[] = {
    0x55,                         /* push %rbp */
    0x48, 0x89, 0xe5,             /* mov %rsp,%rbp */
    0x48, 0x83, 0xec, 0x20,       /* sub $32,%rsp */
    0xb8, 0x00, 0x00, 0xad, 0xde, /* mov $0xdead0000,%eax */
    0x48, 0x89, 0x04, 0x24,       /* mov %rax,(%rsp) */
    0x48, 0x89, 0x74, 0x24, 0x08, /* mov %rsi,8(%rsp) */
    0x48, 0x89, 0xe5,             /* mov %rsp,%rbp */
    0xff, 0xd7,                   /* call *%rdi */
    0x48, 0x83, 0xc4, 0x20,       /* add $32,%rsp */
    0x5d,                         /* pop %rbp */
    0xc3,                         /* ret */
};
typedef void (*garbage_fn)(void (*cb)(void), const void *libc_pc);

static int garbage_mode;
static unsigned char *page, *late_page;
static volatile int late_ready;
static int map_fd;

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
put(const char *s)
{
    if (write(map_fd, s, strlen(s)) < 0)
        perror("write");
}

static void
entry(const void *addr, size_t size, const char *name)
{
    char line[256];
    snprintf(line, sizeof(line), "%lx %zx %s\n", (unsigned long)(uintptr_t)addr, size, name);
    put(line);
}

__attribute__((noinline)) void
burn_a(void)
{
    for (volatile long i = 0; i < 3000000; i++)
        ;
}

static void *volatile keep;

__attribute__((noinline)) void
burn_big(void)
{
    for (volatile long i = 0; i < 3000000; i++)
        ;
    keep = malloc(100); /* an allocation below the 128 KiB JIT frame (heap stacks) */
    free(keep);
}

__attribute__((noinline)) void
burn_cut(void)
{
    for (volatile long i = 0; i < 1000000; i++)
        ;
}

__attribute__((noinline)) void
burn_garbage(void)
{
    for (volatile long i = 0; i < 1000000; i++)
        ;
}

__attribute__((noinline)) void *
worker_main(void *arg)
{
    leaf_fn leaf = (leaf_fn)(void *)page;
    call_fn call = (call_fn)(void *)(page + 64);
    call_fn big = (call_fn)(void *)(page + 128);
    call_fn nofp = (call_fn)(void *)(page + 192);

    (void)arg;
    while (garbage_mode)
        ((garbage_fn)(void *)(page + 256))(burn_garbage, (const char *)(uintptr_t)getppid + 4);
    for (;;) {
        leaf(3000000);
        call(burn_a);
        big(burn_big);
        nofp(burn_cut);
        if (late_ready)
            ((leaf_fn)(void *)late_page)(3000000);
    }
    return NULL;
}

int
main(int argc, char **argv)
{
    double late = argc > 1 ? atof(argv[1]) : 1.0, t0 = now_s();
    long huge = argc > 2 ? atol(argv[2]) : 0;

    garbage_mode = argc > 3 && strcmp(argv[3], "garbage") == 0;
    pthread_attr_t attr;
    pthread_t th;
    char path[64];

    page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    late_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED || late_page == MAP_FAILED)
        return 1;
    memcpy(page, leaf_code, sizeof(leaf_code));
    memcpy(page + 64, call_code, sizeof(call_code));
    memcpy(page + 128, big_code, sizeof(big_code));
    memcpy(page + 192, nofp_code, sizeof(nofp_code));
    memcpy(page + 256, garbage_code, sizeof(garbage_code));
    if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0)
        return 1;

    snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
    map_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (map_fd < 0)
        return 1;
    /* an unrelated big map first, in address order like a runtime's */
    if (huge > 0) {
        char *buf = malloc(1 << 20);
        size_t used = 0;
        for (long i = 0; i < huge; i++) {
            used += (size_t)snprintf(buf + used, 128, "%lx 40 LazyCompile:~filler_%ld big.js:1\n",
                                     0x100000000000ul + (unsigned long)i * 0x40, i);
            if (used > (1 << 20) - 128) {
                if (write(map_fd, buf, used) < 0)
                    return 1;
                used = 0;
            }
        }
        if (used && write(map_fd, buf, used) < 0)
            return 1;
        free(buf);
    }
    put("this is not a map line\n");
    put("zzzz 40 bad_hex_start\n");
    entry(page, sizeof(leaf_code), "stale_leaf_name");
    entry(page, sizeof(leaf_code), "jit_leaf_loop");
    entry(page + 64, sizeof(call_code), "jit_call_fp");
    entry(page + 128, sizeof(big_code), "jit_big_frame");
    entry(page + 192, sizeof(nofp_code), "jit_no_frame_pointer");
    entry(page + 256, sizeof(garbage_code), "jit_garbage_frame");

    /* a stack that is all mapped: the 128 KiB frame must not meet a guard page */
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 20);
    if (pthread_create(&th, &attr, worker_main, NULL) != 0)
        return 1;
    pthread_setname_np(th, "jit-worker");
    printf("ready\n");
    fflush(stdout);

    while (now_s() - t0 < late)
        usleep(10000);
    memcpy(late_page, leaf_code, sizeof(leaf_code));
    if (mprotect(late_page, 4096, PROT_READ | PROT_EXEC) != 0)
        return 1;
    /* a partial line first: the reader must wait for its newline */
    {
        char line[128];
        int n = snprintf(line, sizeof(line), "%lx %zx jit_late_appended\n",
                         (unsigned long)(uintptr_t)late_page, sizeof(leaf_code));
        if (write(map_fd, line, 6) < 0)
            return 1;
        usleep(200000);
        if (write(map_fd, line + 6, (size_t)n - 6) < 0)
            return 1;
    }
    late_ready = 1;
    printf("late\n");
    fflush(stdout);
    for (;;)
        pause();
}
