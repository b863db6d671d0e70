/* p_host_privdrop: after load, the program (as root) unshares its fs
 * attributes (CLONE_FS), chroots into an empty temporary directory and drops
 * to nobody (setgroups, setgid, setuid), then works for ~2.5 s with threads
 * while profiled: /proc is out of reach from then on.  Checks its own
 * results; not root: only the unshare and the work (said in a figure line).
 */
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>

#include "p_host.h"

static void *
work(void *arg)
{
    unsigned long s = 0;
    double end = row_now() + 2.5;

    while (row_now() < end) {
        char *p = malloc(256);
        if (!p)
            row_fail("malloc");
        p[0] = 3;
        s += (unsigned long)p[0];
        free(p);
        s += row_spin(0.001) & 1;
    }
    *(unsigned long *)arg = s;
    return NULL;
}

int
main(void)
{
    char dir[512];
    unsigned long r[2];
    pthread_t t[2];
    int root = geteuid() == 0;

    char addr[64];
    /* the library writes its port file from its server thread once up; the
       harness needs it, and nobody cannot write it in root's directory */
    if (row_addr_of(getpid(), addr, sizeof(addr), 10) < 0)
        row_fail("no port file");
    if (unshare(CLONE_FS))
        row_fail("unshare(CLONE_FS): %s", strerror(errno));
    /* in the harness's run directory (TMPDIR), which it removes: after the
       chroot and the drop this program cannot */
    snprintf(dir, sizeof(dir), "%s/pe-host-chroot.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (root) {
        if (!mkdtemp(dir))
            row_fail("mkdtemp");
        if (chroot(dir) || chdir("/"))
            row_fail("chroot: %s", strerror(errno));
        if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
            row_fail("drop to nobody: %s", strerror(errno));
        if (setuid(0) == 0)
            row_fail("setuid(0) worked again");
    }
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work, &r[i]);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        if (!r[i])
            row_fail("thread %d did no work", i);
    }
    printf("figure: privdrop: %s\n", root ? "unshare, chroot, nobody" : "unshare only (not root)");
    row_done();
}
