/*
 * p_host_fork_walk (host-matrix row): fork while two threads dlopen/dlclose
 * an object kept loaded (libz: the row holds it open, as the library does;
 * a real load or unload in another thread at a fork breaks a child's dlopen
 * in glibc itself, with or without us), so that after each the library walks the loaded objects
 * (dl_iterate_phdr) on those threads; each child does the same once and exits 0.  glibc's fork does
 * not reset the lock dl_iterate_phdr takes: a child forked during one of our walks used to wait
 * forever in its own (preload/loadgate.h; 1 in ~10 children hung).  PE_ROW_CHILDREN children
 * (default 200); one not done within 10 s has hung: it is killed and the row fails.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "host_row.h"

static volatile int stop;

static void *
loader(void *unused)
{
    while (!stop) {
        void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
        if (h)
            dlclose(h);
    }
    return NULL;
}

int
main(void)
{
    long want = getenv("PE_ROW_CHILDREN") ? atol(getenv("PE_ROW_CHILDREN")) : 200;
    pthread_t l[2];

    if (!dlopen("libz.so.1", RTLD_NOW)) /* kept: the loaders only count references */
        row_fail("dlopen libz.so.1: %s", dlerror());
    for (int i = 0; i < 2; i++)
        if (pthread_create(&l[i], NULL, loader, NULL))
            row_fail("pthread_create");
    for (long i = 0; i < want; i++) {
        int status, w;
        pid_t pid = fork();

        if (pid < 0)
            row_fail("fork: %s", strerror(errno));
        if (pid == 0) {
            void *h = dlopen("libz.so.1", RTLD_NOW);
            if (!h || dlclose(h) != 0)
                _exit(3);
            _exit(0);
        }
        if ((w = row_wait_child(pid, 10, &status)) == -1)
            row_fail("fork child %ld of %ld hung", i + 1, want);
        if (w < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            row_fail("child %ld: status 0x%x", i + 1, status);
    }
    stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(l[i], NULL);
    printf("figure: fork_walk: %ld children forked during dlopen/dlclose walks, none hung\n", want);
    row_done();
    return 0;
}
