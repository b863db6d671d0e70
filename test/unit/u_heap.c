/*
 * u_heap.c: unit tests of heap/ without interposition: the sampling math on
 * synthetic allocation streams (unbiased totals within a few percent, Go's
 * inclusion probability), the stack table, the live table under churn (no
 * slow-down, no lost or stale entries, no torn reads), and the
 * /allocs_profile recording's states.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../heap/heap_int.h"
#include "../../preload/init.h"
#include "../../preload/rand.h"
#include "../../preload/real.h"
#include "pe_test.h"

#define R 524288

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Run a stream through Go's countdown rule; return estimated bytes and count. */
static void
simulate(uint64_t (*size_of)(uint64_t *), uint64_t total, double *true_b, double *true_n,
         double *est_b, double *est_n, uint64_t *samples)
{
    uint64_t rng = 12345, srng = 999, done = 0;
    int64_t c = 0;
    double eb = 0, en = 0, n = 0;

    pe_rand_seed(&rng);
    c = pe_heap_draw(&rng, R);
    *samples = 0;
    while (done < total) {
        uint64_t s = size_of(&srng);
        done += s;
        n++;
        c -= (int64_t)s;
        if (c <= 0) {
            uint64_t w = pe_heap_weight_fx(s, R);
            eb += (double)pe_heap_bytes_fx(w, s) / PE_HEAP_BYTES_ONE;
            en += (double)w / PE_HEAP_CNT_ONE;
            c = pe_heap_draw(&rng, R);
            (*samples)++;
        }
    }
    *true_b = (double)done;
    *true_n = n;
    *est_b = eb;
    *est_n = en;
}

static uint64_t
size_loguniform(uint64_t *s)
{
    int sh = 4 + (int)(pe_rand_next(s) % 13);
    return (1ull << sh) + pe_rand_next(s) % (1ull << sh);
}

static uint64_t
size_1k(uint64_t *s)
{
    (void)s;
    return 1024;
}

static uint64_t
size_big(uint64_t *s)
{
    return 256 * 1024 + pe_rand_next(s) % (4 * 1024 * 1024);
}

static void
test_sampling_math(void)
{
    uint64_t rng = 0, samples;
    double sum = 0, tb, tn, eb, en;
    int hits = 0;

    /* The interval's mean is the rate. */
    pe_rand_seed(&rng);
    for (int i = 0; i < 1000000; i++)
        sum += (double)pe_heap_draw(&rng, R);
    CHECKF(fabs(sum / 1e6 / R - 1) < 0.01, "mean interval %.0f, want %d", sum / 1e6, R);

    /* An allocation of R bytes is sampled with probability 1 - 1/e. */
    for (int i = 0; i < 200000; i++)
        hits += pe_heap_draw(&rng, R) <= R;
    CHECKF(fabs(hits / 200000.0 - (1 - exp(-1))) < 0.01, "P(sample R bytes) = %.4f", hits / 2e5);

    /* Weights: 1/(1-exp(-s/R)). */
    CHECK(pe_heap_weight_fx(1ull << 40, R) == PE_HEAP_CNT_ONE);
    CHECKF(fabs((double)pe_heap_weight_fx(R, R) / PE_HEAP_CNT_ONE - 1 / (1 - exp(-1))) < 1e-4,
           "w(R)");
    CHECKF(fabs((double)pe_heap_weight_fx(16, R) / PE_HEAP_CNT_ONE - R / 16.0) < 1.0, "w(16)");
    /* against libm from 1 byte to 40 rates, across the series' switch at R/16:
       within the fixed point's rounding (1/2 unit) */
    {
        double worst = 0;
        for (uint64_t s = 1; s < 40ull * R; s = s + 1 + s / 97) {
            double want = PE_HEAP_CNT_ONE / -expm1(-(double)s / R);
            double err = fabs((double)pe_heap_weight_fx(s, R) - want);
            worst = err > worst ? err : worst;
        }
        CHECKF(worst <= 0.5 + 1e-6, "weights vs libm: worst %.3f units", worst);
    }

    /* Unbiased totals on synthetic streams (4 GiB each: ~8k samples, ~1% std). */
    simulate(size_loguniform, 4ull << 30, &tb, &tn, &eb, &en, &samples);
    CHECKF(fabs(eb / tb - 1) < 0.04, "log-uniform sizes: bytes est %.4g true %.4g", eb, tb);
    printf("  log-uniform 16B..128KiB: %llu samples, bytes %+.2f%%, objects %+.2f%%\n",
           (unsigned long long)samples, 100 * (eb / tb - 1), 100 * (en / tn - 1));
    simulate(size_1k, 4ull << 30, &tb, &tn, &eb, &en, &samples);
    CHECKF(fabs(eb / tb - 1) < 0.04, "1 KiB: bytes est %.4g true %.4g", eb, tb);
    CHECKF(fabs(en / tn - 1) < 0.04, "1 KiB: objects est %.4g true %.4g", en, tn);
    printf("  1 KiB: %llu samples, bytes %+.2f%%, objects %+.2f%%\n", (unsigned long long)samples,
           100 * (eb / tb - 1), 100 * (en / tn - 1));
    simulate(size_big, 16ull << 30, &tb, &tn, &eb, &en, &samples);
    CHECKF(fabs(eb / tb - 1) < 0.02, "large: bytes est %.4g true %.4g", eb, tb);
    CHECKF(fabs(en / tn - 1) < 0.03, "large: objects est %.4g true %.4g", en, tn);
    printf("  256KiB..4MiB: %llu samples, bytes %+.2f%%, objects %+.2f%%\n",
           (unsigned long long)samples, 100 * (eb / tb - 1), 100 * (en / tn - 1));
}

/* Our -ln(u) and 1 - exp(-x) agree with libm's. */
static void
test_math_functions(void)
{
    uint64_t rng = 77;
    double worst = 0, u, x;

    for (int i = 0; i < 1000000; i++) {
        u = (double)((pe_rand_next(&rng) >> 11) + 1) / 9007199254740992.0;
        if (i < 64)
            u = ldexp(1.0, -i); /* powers of two, down to ... */
        if (i == 64)
            u = 1.0 / 9007199254740992.0; /* the smallest u drawn */
        if (i == 65)
            u = 0.7071067811865476; /* the split of the mantissa range */
        double d = fabs(pe_rand_neg_log(u) - (-log(u))) / (1e-300 + fabs(log(u)));
        if (-log(u) == 0)
            d = fabs(pe_rand_neg_log(u));
        if (d > worst)
            worst = d;
    }
    CHECKF(worst < 1e-10, "-ln(u): worst relative error %.3g", worst);
    worst = 0;
    for (x = 1e-7; x < 40; x *= 1.01) {
        double s = x * R, exact = 1 / -expm1(-x);
        uint64_t w = pe_heap_weight_fx((uint64_t)s, R);
        double want = 1 / -expm1(-(double)(uint64_t)s / R), d = fabs(w / 65536.0 - want) / want;
        (void)exact;
        if (d > worst && (uint64_t)s)
            worst = d;
    }
    CHECKF(worst < 1e-5, "weights: worst relative error %.3g", worst);
}

/*
 * The chunked countdown (heap.h, pe_heap_interval_step): Go's rule still
 * holds with intervals longer than a chunk, blocks bigger than one, a
 * recording that parks the countdown, and parking from outside (the
 * recording's start on another thread).  Estimates unbiased within 4%.
 */
static void
test_interval_step(void)
{
    static const int64_t rates[] = {R, 8 << 20};
    pe_tls_t *t = &pe_tls;

    for (int k = 0; k < 2; k++) {
        int64_t rate = rates[k];
        uint64_t srng = 4242, samples = 0, calls = 0, slow = 0, bad_countdown = 0, i;
        uint64_t budget = rate > R ? 96ull << 30 : 8ull << 30;
        double done = 0, eb = 0;
        int fresh = 1, was_recording = 0;

        t->heap_countdown = 0;
        t->heap_reserve = 0;
        t->heap_recording = 0;
        for (i = 0; done < (double)budget; i++) {
            uint64_t sz = i % 64 ? size_loguniform(&srng) : size_big(&srng);
            /* a recording from 1/4 to 3/8 of the way: every call comes here */
            int recording = done > budget / 4.0 && done < budget * 3 / 8.0;

            done += (double)sz;
            calls++;
            if (i % 1000003 == 7 || (recording && !was_recording))
                t->heap_countdown = 0; /* parked from outside, as a recording's start does */
            was_recording = recording;
            if (!pe_heap_countdown(sz)) {
                if (recording)
                    bad_countdown++; /* a recording must see every call */
                continue;
            }
            slow++;
            if (pe_heap_interval_step(t, sz, rate, fresh, recording)) {
                eb += (double)pe_heap_bytes_fx(pe_heap_weight_fx(sz, rate), sz) / PE_HEAP_BYTES_ONE;
                samples++;
            }
            fresh = 0;
            if (t->heap_countdown > PE_HEAP_CHUNK || (recording && t->heap_countdown))
                bad_countdown++;
        }
        CHECKF(!bad_countdown, "rate %lld: %llu calls saw a wrong countdown", (long long)rate,
               (unsigned long long)bad_countdown);
        CHECKF(fabs(eb / done - 1) < 0.04, "rate %lld: bytes est %.4g true %.4g", (long long)rate,
               eb, done);
        printf("  chunked countdown, rate %lld: %llu samples, bytes %+.2f%%, %llu of %llu calls "
               "slow (1/8 of the bytes recorded)\n",
               (long long)rate, (unsigned long long)samples, 100 * (eb / done - 1),
               (unsigned long long)slow, (unsigned long long)calls);
    }
    t->heap_countdown = 0;
}

static void
test_stacks(void)
{
    uintptr_t a[3] = {0x1000, 0x2000, 0x3000}, b[3] = {0x1000, 0x2000, 0x3001}, out[8];
    uint32_t ia = pe_heap_stacks_intern(a, 3), ib = pe_heap_stacks_intern(b, 3);
    pe_heap_rec_t rec;

    CHECK(ia != PE_HEAP_NO_STACK && ib != PE_HEAP_NO_STACK && ia != ib);
    CHECK(pe_heap_stacks_intern(a, 3) == ia);
    CHECK(pe_heap_stacks_intern(a, 2) != ia);
    CHECK(pe_heap_stacks_intern(a, 0) == PE_HEAP_NO_STACK);
    CHECK(pe_heap_stack(ia, out, 8) == 3 && out[2] == 0x3000);
    pe_heap_stacks_account(ia, 0, PE_HEAP_CNT_ONE, 100);
    pe_heap_stacks_account(ia, 0, PE_HEAP_CNT_ONE, 100);
    pe_heap_stacks_account(ia, 1, PE_HEAP_CNT_ONE, 100);
    CHECK(pe_heap_stacks_read(ia, &rec) == 1);
    CHECK(rec.alloc_cnt_fx == 2 * PE_HEAP_CNT_ONE && rec.inuse_cnt_fx == PE_HEAP_CNT_ONE);
    CHECK(rec.alloc_bytes_fx == 200 * PE_HEAP_BYTES_ONE &&
          rec.inuse_bytes_fx == 100 * PE_HEAP_BYTES_ONE);
    CHECK(rec.raw_alloc_n == 2 && rec.raw_inuse_n == 1 && rec.raw_inuse_b == 100);
}

static int
cmp_addr(const void *a, const void *b)
{
    uintptr_t x = ((const pe_heap_live_t *)a)->addr, y = ((const pe_heap_live_t *)b)->addr;
    return x < y ? -1 : x > y;
}

#define LIVE 1500
static void
test_live(void)
{
    uintptr_t live[LIVE];
    uint32_t slot[LIVE];
    uint64_t rng = 77;
    double first = 0, last = 0;
    uint64_t first_jumps = 0, last_jumps = 0;
    pe_heap_live_t *v;
    size_t n;
    int ok = 1, i;

    /* fill, check, empty */
    for (i = 0; i < LIVE; i++) {
        live[i] = 0x10000000 + (uintptr_t)i * 48;
        if (!(slot[i] = pe_heap_live_insert(live[i], 64, 3, PE_HEAP_CNT_ONE)))
            ok = 0;
    }
    CHECK(ok);
    CHECK(pe_heap_live_count() == LIVE);
    CHECK(pe_heap_live_copy(&v, &n) == 0 && n == LIVE);
    CHECK(v[0].size == 64 && v[0].stack == 3 && v[0].weight == 1.0);
    free(v);
    for (i = 0; i < LIVE; i++)
        pe_heap_live_remove(slot[i], live[i]);
    CHECK(pe_heap_live_count() == 0);
    /* A slot that holds something else is left alone. */
    slot[0] = pe_heap_live_insert(0x5550, 8, 1, PE_HEAP_CNT_ONE);
    pe_heap_live_remove(slot[0], 0x12345670);
    CHECK(pe_heap_live_count() == 1);
    pe_heap_live_remove(slot[0], 0x5550);
    CHECK(pe_heap_live_count() == 0);

    /* Churn: 4M replace operations at ~LIVE/4096 load; the last million must
       not cost more slots tried than the first.  An insert moves this
       thread's cursor one past the slot it took, so the cursor's advance is
       the slots it tried (a jump past a long run shows as a big advance).
       Counted, not timed: a busy machine cannot fail it. */
    for (i = 0; i < LIVE; i++) {
        live[i] = (pe_rand_next(&rng) & 0xffffffffff0ull) | 0x10;
        slot[i] = pe_heap_live_insert(live[i], 64, 3, PE_HEAP_CNT_ONE);
    }
    for (int round = 0; round < 4; round++) {
        uint64_t tried = 0, jumps = 0;
        for (int k = 0; k < 1000000; k++) {
            int j = (int)(pe_rand_next(&rng) % LIVE);
            uint32_t before = pe_tls.heap_live_cursor, step;
            pe_heap_live_remove(slot[j], live[j]);
            live[j] = (pe_rand_next(&rng) & 0xffffffffff0ull) | 0x10;
            if (!(slot[j] = pe_heap_live_insert(live[j], 64, 3, PE_HEAP_CNT_ONE)))
                ok = 0;
            step = pe_tls.heap_live_cursor - before;
            if (step > 64) /* more than one run of probes (live.c) */
                jumps++;
            else
                tried += step;
        }
        if (round == 0)
            first = (double)tried / 1e6, first_jumps = jumps;
        if (round == 3)
            last = (double)tried / 1e6, last_jumps = jumps;
    }
    CHECK(ok);
    CHECKF(first >= 1 && last < 2 * first && last_jumps <= first_jumps + 10,
           "churn costs more: slots tried per insert %.3f first 1M, %.3f last; jumps %llu, %llu",
           first, last, (unsigned long long)first_jumps, (unsigned long long)last_jumps);
    printf("  live churn: slots tried per insert %.3f first 1M, %.3f last 1M (jumps %llu, %llu)\n",
           first, last, (unsigned long long)first_jumps, (unsigned long long)last_jumps);
    CHECK(pe_heap_live_count() == LIVE);
    /* Exactly the expected set is listed. */
    CHECK(pe_heap_live_copy(&v, &n) == 0 && n == LIVE);
    qsort(v, n, sizeof(*v), cmp_addr);
    for (i = 0; i < LIVE; i++) {
        pe_heap_live_t key = {.addr = live[i]};
        if (!bsearch(&key, v, n, sizeof(*v), cmp_addr))
            ok = 0;
    }
    CHECK(ok);
    free(v);
    for (i = 0; i < LIVE; i++)
        pe_heap_live_remove(slot[i], live[i]);
    CHECK(pe_heap_live_count() == 0);

    /* Bounded: inserts stop listing once the table is full. */
    for (i = 0; i < 5000; i++)
        if (!pe_heap_live_insert(0x20000000 + (uintptr_t)i * 64, 8, 3, PE_HEAP_CNT_ONE))
            break;
    CHECKF(i == (int)pe_heap_live_capacity(), "refused at %d, capacity %llu", i,
           (unsigned long long)pe_heap_live_capacity());
    CHECK(pe_heap_live_copy(&v, &n) == 0 && n == pe_heap_live_capacity());
    for (size_t k = 0; k < n; k++)
        pe_heap_live_remove(0, 0); /* slot 0 means "not listed": ignored */
    for (size_t k = 0; k < n; k++) /* find each one's slot again by scanning */
        for (uint32_t s = 1; s <= pe_heap_live_capacity(); s++)
            pe_heap_live_remove(s, v[k].addr);
    free(v);
    CHECK(pe_heap_live_count() == 0);
}

/* Two writers churn while a reader copies: every entry read is whole (its
   size and stack derive from its address), never a mix of two. */
static volatile int live_stop;
static void *
live_writer(void *arg)
{
    uintptr_t base = (uintptr_t)arg, a[256];
    uint32_t s[256] = {0};
    uint64_t rng = base;

    for (int i = 0; i < 256; i++)
        a[i] = 0;
    while (!live_stop) {
        int j = (int)(pe_rand_next(&rng) & 255);
        if (a[j])
            pe_heap_live_remove(s[j], a[j]);
        a[j] = base + ((pe_rand_next(&rng) & 0xffffff) << 4);
        s[j] =
            pe_heap_live_insert(a[j], a[j] & 0xfff0, (uint32_t)(a[j] >> 4) & 0xff, PE_HEAP_CNT_ONE);
    }
    for (int i = 0; i < 256; i++)
        if (a[i])
            pe_heap_live_remove(s[i], a[i]);
    return NULL;
}

static void
test_live_threads(void)
{
    pthread_t w[2];
    int bad = 0, copies = 0;
    double t0 = now();

    live_stop = 0;
    pthread_create(&w[0], NULL, live_writer, (void *)(uintptr_t)0x100000000ull);
    pthread_create(&w[1], NULL, live_writer, (void *)(uintptr_t)0x200000000ull);
    while (now() - t0 < 0.5) {
        pe_heap_live_t *v;
        size_t n;
        if (pe_heap_live_copy(&v, &n) != 0)
            break;
        for (size_t k = 0; k < n; k++)
            if (v[k].size != (v[k].addr & 0xfff0) || v[k].stack != ((v[k].addr >> 4) & 0xff))
                bad++;
        free(v);
        copies++;
    }
    live_stop = 1;
    pthread_join(w[0], NULL);
    pthread_join(w[1], NULL);
    CHECKF(bad == 0, "%d torn entries in %d copies", bad, copies);
    CHECK(pe_heap_live_count() == 0);
}

static void
test_allocs(void)
{
    pe_heap_arec_t *v;
    int n;
    double p;
    uint64_t on, ob;
    uintptr_t s1[1] = {0x77};
    uint32_t st = pe_heap_stacks_intern(s1, 1);

    CHECK(pe_heap_allocs_start(0, 0) == -EINVAL);
    CHECK(pe_heap_allocs_stop(1, &v, &n, &p, &on, &ob) == -ENOENT);
    CHECK(pe_heap_allocs_start(0.5, 0) == 0);
    CHECK(pe_heap_allocs_on == 1 && pe_heap_allocs_state() == 1);
    CHECK(pe_heap_allocs_start(0.5, 1) == -EBUSY);
    CHECK(pe_heap_allocs_stop(1, &v, &n, &p, &on, &ob) == -ENOENT); /* timed one runs */
    for (int i = 0; i < 10; i++)
        pe_heap_allocs_record(st, 100);
    pe_heap_allocs_record(st, 200);
    CHECK(pe_heap_allocs_stop(0, &v, &n, &p, &on, &ob) == 0);
    CHECK(pe_heap_allocs_on == 0 && pe_heap_allocs_state() == 0);
    CHECK(n == 2 && p == 0.5 && on == 0);
    for (int i = 0; i < n; i++)
        CHECK(v[i].stack == st &&
              ((v[i].size == 100 && v[i].count == 10) || (v[i].size == 200 && v[i].count == 1)));
    free(v);
    /* A new recording starts empty. */
    CHECK(pe_heap_allocs_start(1, 1) == 0);
    CHECK(pe_heap_allocs_threshold == UINT64_MAX);
    CHECK(pe_heap_allocs_stop(1, &v, &n, &p, &on, &ob) == 0 && n == 0);
    free(v);
}

/*
 * A dormant process (preload/init.h: its bind failed, say) samples nothing:
 * nobody could read the profile, and its threads started since are not
 * primed for libunwind, so each sample cost microseconds of frame-pointer
 * walking with a syscall per page.  Every allocation is a sample point here
 * (rate 1 byte): tagged while active, plain once dormant.
 */
static void
test_dormant(void)
{
    pe_heap_tag_t *t;
    void *p;

    pe_real_init();
    pe_heap_tag_key_init();
    pe_heap_hot.page_start_ok = !pe_real_foreign_malloc;
    __atomic_store_n(&pe_heap_rate_bytes, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&pe_heap_gen, PE_HEAP_GEN_BOOT + 7, __ATOMIC_RELEASE);
    pe_init_set_active();
    /* as the malloc hook: the countdown, then the slow path */
    for (int i = 0; i < 3; i++) {
        CHECK(pe_heap_countdown(100));
        p = pe_heap_alloc_slow(PE_HEAP_MALLOC, 16, 100);
        CHECK(p && (t = pe_heap_tag_of(p)) && t->cnt_fx > 0 && t->size == 100);
        pe_heap_free_slow(p);
    }
    pe_init_go_dormant();
    for (int i = 0; i < 3; i++) {
        CHECK(pe_heap_countdown(100));
        p = pe_heap_alloc_slow(PE_HEAP_MALLOC, 16, 100);
#ifndef __SANITIZE_ADDRESS__ /* the word below an untagged block is ASan's redzone */
        CHECK(p && !pe_heap_tag_of(p));
#else
        CHECK(p);
#endif
        pe_real.free(p);
    }
    __atomic_store_n(&pe_heap_rate_bytes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pe_heap_gen, PE_HEAP_GEN_BOOT + 8, __ATOMIC_RELEASE);
}

int
main(void)
{
    CHECK(pe_heap_stacks_init() == 0);
    CHECK(pe_heap_live_init(4096) == 0);
    CHECK(pe_heap_allocs_init() == 0);
    test_sampling_math();
    test_math_functions();
    test_interval_step();
    test_stacks();
    test_live();
    /* drd does not model C11 atomics: every lock-free hand-over would be
       reported (test/e2e/e2e_valgrind.sh sets this). */
    if (!getenv("PE_UNDER_DRD"))
        test_live_threads();
    test_allocs();
    test_dormant();
    return pe_test_done();
}
