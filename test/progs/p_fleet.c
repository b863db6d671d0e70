/*
 * p_fleet.c: a busy service for the scrape-path tests (e2e_fleet.sh) and the
 * soak and always-on benchmarks (scripts/soak_fleet.sh, bench_fleet.sh).
 * Always: fleet_busy() burns CPU on one thread, fleet_sleeper() sleeps in
 * short naps on another (off-CPU time for fgprof), and fleet_churn() allocates
 * and frees small blocks at a steady pace.  On stdin, one command a line, each
 * answered "done" on stdout once finished (ground truth for the delta paths):
 *   alloc N   allocate and free N bytes in 64 KiB blocks at fleet_alloc_site()
 *   hold N    keep N more bytes live (1 MiB blocks) at fleet_hold_site()
 *   fight MS  two threads fight over one mutex in fleet_fight() for MS ms
 *   quit      exit 0 (so does EOF)
 * usage: p_fleet [FIFO]   (P_FLEET_QUIET=1: no busy thread, for the always-on bench)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static volatile uint64_t sink;

static void
nap_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

    while (nanosleep(&ts, &ts) != 0) /* retried on EINTR, as POSIX asks */
        ;
}

__attribute__((noinline)) static uint64_t
fleet_busy_step(uint64_t x)
{
    for (int i = 0; i < 100000; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

static void *
fleet_busy(void *arg)
{
    uint64_t x = 1;

    while (!stop)
        x = fleet_busy_step(x);
    sink = x;
    return arg;
}

static void *
fleet_sleeper(void *arg)
{
    while (!stop)
        nap_us(20000);
    return arg;
}

__attribute__((noinline)) static void *
fleet_churn_alloc(size_t n)
{
    return malloc(n);
}

static void *
fleet_churn(void *arg)
{
    while (!stop) {
        for (int i = 0; i < 100; i++)
            free(fleet_churn_alloc(32 + (size_t)i * 8));
        nap_us(1000);
    }
    return arg;
}

__attribute__((noinline)) static void
fleet_alloc_site(uint64_t bytes)
{
    for (uint64_t done = 0; done < bytes; done += 65536) {
        char *p = malloc(65536);

        if (!p)
            break;
        p[0] = 1;
        sink += (uint64_t)p[0];
        free(p);
    }
}

static void **held;
static size_t nheld, capheld;

__attribute__((noinline)) static void
fleet_hold_site(uint64_t bytes)
{
    for (uint64_t done = 0; done < bytes; done += 1 << 20) {
        if (nheld == capheld) {
            capheld = capheld ? 2 * capheld : 64;
            held = realloc(held, capheld * sizeof(*held));
        }
        held[nheld] = malloc(1 << 20);
        memset(held[nheld++], 1, 4096);
    }
}

static pthread_mutex_t fight_mu = PTHREAD_MUTEX_INITIALIZER;
static volatile int fighting;

__attribute__((noinline)) static void
fleet_fight_lock(void)
{
    pthread_mutex_lock(&fight_mu);
    nap_us(100);
    pthread_mutex_unlock(&fight_mu);
}

static void *
fleet_fight(void *arg)
{
    while (fighting) {
        fleet_fight_lock();
        nap_us(20);
    }
    return arg;
}

int
main(int argc, char **argv)
{
    pthread_t busy, sleeper, churn, f1, f2;
    const char *q = getenv("P_FLEET_QUIET");
    int quiet = q && *q == '1';
    FILE *in = argc > 1 ? fopen(argv[1], "r+") : stdin;
    char line[128];

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!in) {
        perror(argv[1]);
        return 1;
    }
    if (!quiet)
        pthread_create(&busy, NULL, fleet_busy, NULL);
    pthread_create(&sleeper, NULL, fleet_sleeper, NULL);
    pthread_create(&churn, NULL, fleet_churn, NULL);
    printf("ready\n");
    while (fgets(line, sizeof(line), in)) {
        unsigned long long n = 0;

        if (sscanf(line, "alloc %llu", &n) == 1) {
            fleet_alloc_site(n);
        } else if (sscanf(line, "hold %llu", &n) == 1) {
            fleet_hold_site(n);
        } else if (sscanf(line, "fight %llu", &n) == 1) {
            fighting = 1;
            pthread_create(&f1, NULL, fleet_fight, NULL);
            pthread_create(&f2, NULL, fleet_fight, NULL);
            nap_us((long)n * 1000);
            fighting = 0;
            pthread_join(f1, NULL);
            pthread_join(f2, NULL);
        } else if (!strncmp(line, "quit", 4)) {
            break;
        }
        printf("done\n");
    }
    stop = 1;
    if (!quiet)
        pthread_join(busy, NULL);
    pthread_join(sleeper, NULL);
    pthread_join(churn, NULL);
    return 0;
}
