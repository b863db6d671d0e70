/* p_host_vmem.h: the body of the rows p_host_vmem200 and p_host_vmem400,
 * started under `ulimit -v VMEM_KB` (their .ulimit file): with the
 * library's server and every kind of profiling running, the program mallocs
 * 1 MiB blocks (touching each) until malloc fails, and must get at least 95%
 * of the MiB the same program gets under the same limit without the library
 * (itself, exec'd with LD_PRELOAD removed: "count" mode).  Then it frees them
 * and goes on.  Our requests that find no memory meanwhile answer 503.
 * Measured with every profile in flight: 200000 KB gives 184 MiB of 191
 * (96.3%), 400000 KB 378 of 386 (97.9%).
 */
#include <sys/wait.h>

#include "p_host.h"

static int
count_blocks(void ***keep)
{
    int n = 0, cap = 1 << 16;
    void **v = calloc((size_t)cap, sizeof(*v));

    if (!v)
        row_fail("calloc");
    for (; n < cap; n++) {
        char *p = malloc(1 << 20);
        if (!p)
            break;
        memset(p, 1, 4096);
        v[n] = p;
    }
    *keep = v;
    return n;
}

/* The count without the library, same limit (inherited). */
static int
baseline(const char *self)
{
    int fd[2], st, n = -1;
    char buf[32];
    ssize_t r;
    pid_t pid;

    if (pipe(fd) < 0)
        row_fail("pipe");
    if ((pid = fork()) == 0) {
        dup2(fd[1], 1);
        unsetenv("LD_PRELOAD");
        execl(self, self, "count", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    r = read(fd[0], buf, sizeof(buf) - 1);
    close(fd[0]);
    waitpid(pid, &st, 0);
    if (r > 0) {
        buf[r] = 0;
        n = atoi(buf);
    }
    if (n <= 0)
        row_fail("baseline count failed");
    return n;
}

int
main(int argc, char **argv)
{
    char addr[64];
    void **v;
    int base, got;

    if (argc > 1 && !strcmp(argv[1], "count")) {
        printf("%d\n", count_blocks(&v));
        return 0;
    }
    base = baseline("/proc/self/exe");
    if (row_addr_of(getpid(), addr, sizeof(addr), 30) < 0)
        row_fail("no port file");
    row_sleep(0.7); /* the profiles are under way */
    got = count_blocks(&v);
    for (int i = 0; i < got; i++)
        free(v[i]);
    free(v);
    printf("figure: vmem%d: %d MiB with the library, %d without\n", VMEM_KB / 1000, got, base);
    if (got * 100 < base * 95)
        row_fail("%d MiB with the library, %d without: under 95%%", got, base);
    row_done();
}
