/*
 * p_host_fork_dlopen (host-matrix row): fork from a thread while two others
 * allocate 1 MiB blocks, PE_ROW_CHILDREN children (default 20;
 * test/e2e/e2e_host_proc.sh runs more at PROFEP_HEAP_RATE=1) in each of two
 * phases.  Phase 1: each child does dlopen("libz.so.1")/dlclose and exits 0;
 * a child not done within 10 s has hung (it used to spin in dlclose on an
 * unwinder pin held by a thread that did not survive the fork: issue 15,
 * point 3): it is killed and the row fails.  Phase 2: a third thread
 * dlopen/dlcloses libm meanwhile, and each child only allocates and exits 0
 * (a child's dlopen while another thread was inside the loader at the fork
 * hangs or crashes in glibc itself, with or without us).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "host_row.h"

static volatile int stop;

static void *
allocator(void *unused)
{
    while (!stop) {
        char *p = malloc(1 << 20);
        if (p)
            p[0] = 1;
        free(p);
    }
    return NULL;
}

static void *
loader(void *unused)
{
    while (!stop) {
        void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
        if (h)
            dlclose(h);
        row_sleep_ms(1);
    }
    return NULL;
}

static int phase = 1;

static void *
forker(void *arg)
{
    long want = (long)arg;

    for (long i = 0; i < want; i++) {
        int status, w;
        pid_t pid = fork();

        if (pid < 0)
            row_fail("fork: %s", strerror(errno));
        if (pid == 0) {
            if (phase == 1) {
                void *h = dlopen("libz.so.1", RTLD_NOW);
                if (!h || dlclose(h) != 0)
                    _exit(3);
            } else {
                for (int k = 0; k < 100; k++)
                    free(malloc((size_t)k * 64 + 1));
            }
            _exit(0);
        }
        if ((w = row_wait_child(pid, 10, &status)) == -1)
            row_fail("phase %d: fork child %ld of %ld hung", phase, i + 1, want);
        if (w < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            row_fail("phase %d: child %ld: status 0x%x", phase, i, status);
    }
    return NULL;
}

int
main(void)
{
    long children = getenv("PE_ROW_CHILDREN") ? atol(getenv("PE_ROW_CHILDREN")) : 20;
    pthread_t a, b, l, f;

    if (pthread_create(&a, NULL, allocator, NULL) || pthread_create(&b, NULL, allocator, NULL) ||
        pthread_create(&f, NULL, forker, (void *)children))
        row_fail("pthread_create");
    pthread_join(f, NULL);
    phase = 2;
    if (pthread_create(&l, NULL, loader, NULL) ||
        pthread_create(&f, NULL, forker, (void *)children))
        row_fail("pthread_create");
    pthread_join(f, NULL);
    stop = 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_join(l, NULL);
    fprintf(stderr, "fork children: 2 x %ld, none hung\n", children);
    row_done();
    return 0;
}
