/* p_host_sleepers.h: the body of the rows p_host_sleep10k and p_host_sleep30k:
 * SLEEPERS threads asleep in pthread_cond_wait (32 KiB stacks so that 30,000
 * fit) while profiled; then the row asks its own server for
 * /debug/pprof/goroutine?debug=2 and counts the thread blocks ("goroutine TID"
 * lines): all SLEEPERS and the main thread must be listed (the thread
 * registry and the dump grow with the program), and no line may say
 * threads were left out.  Prints figures: the dump's time and size and the
 * process's peak RSS growth across it.
 */
#include <pthread.h>
#include <sys/resource.h>

#include "p_host.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go = 1;

static void *
sleeper(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    while (go)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* GET path whole into a malloc'd buffer (*out, NUL-terminated); the status. */
static int
get_all(const char *addr, const char *path, char **out, size_t *len)
{
    size_t cap = (size_t)256 << 20;
    char *b = malloc(cap);
    int st;

    if (!b)
        row_fail("no memory for the answer");
    st = row_http(addr, path, b, cap, len);
    *out = b;
    return st;
}

static long
rss_kb(void)
{
    char line[256];
    long v = -1;
    FILE *f = fopen("/proc/self/status", "r");

    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmHWM:", 6))
            v = atol(line + 6);
    if (f)
        fclose(f);
    return v;
}

int
main(void)
{
    int nt = SLEEPERS, listed = 0;
    pthread_t *t = calloc((size_t)nt, sizeof(*t));
    pthread_attr_t a;
    char addr[64], *body, *p;
    size_t len;
    double t0, dt;
    long hwm0, hwm1;
    int st;

    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 32 * 1024);
    for (int i = 0; i < nt; i++) {
        int e = pthread_create(&t[i], &a, sleeper, NULL);
        /* pid_max is 32,768 on many machines, shared with every process:
           30,000 may not all be had; 2/3 of them still tests the growth */
        if (e == EAGAIN && i >= nt * 2 / 3) {
            printf("figure: sleep%dk: the kernel gave %d threads (pid_max)\n", nt / 1000, i);
            nt = i;
            break;
        }
        if (e)
            row_fail("pthread_create %d: %s", i, strerror(e));
    }
    if (row_addr_of(getpid(), addr, sizeof(addr), 30) < 0)
        row_fail("no port file");
    row_sleep(0.5);
    hwm0 = rss_kb();
    t0 = row_now();
    st = get_all(addr, "/debug/pprof/goroutine?debug=2", &body, &len);
    dt = row_now() - t0;
    hwm1 = rss_kb();
    if (st != 200)
        row_fail("goroutine?debug=2: status %d", st);
    for (p = body; (p = strstr(p, "\ngoroutine ")); p++)
        listed++;
    if (strstr(body, "left out"))
        row_fail("the dump says threads were left out: %.200s", body);
    if (listed < nt + 1)
        row_fail("goroutine?debug=2 lists %d threads of %d: %.200s", listed, nt + 1, body);
    printf("figure: sleep%dk: debug=2 of %d threads in %.1f s, %zu bytes, peak RSS +%ld MB\n",
           SLEEPERS / 1000, listed, dt, len, (hwm1 - hwm0) / 1024);
    free(body);
    pthread_mutex_lock(&mu);
    go = 0;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < nt; i++)
        pthread_join(t[i], NULL);
    row_done();
}
