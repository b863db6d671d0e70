/*
 * attach_shim.c: the injector's part, in process, for the attach tests
 * (built as build/test/libpe_attach_shim.so, preloaded into a test program;
 * it defines nothing the program calls).  Its thread does what `profep
 * attach` makes the injector's bootstrap thread do (preload/attach.h): name
 * itself profep-attach, dlopen the library (PE_SHIM_LIB) RTLD_NOW |
 * RTLD_LOCAL, call profendpoints_attach with the settings in
 * $PE_SHIM_DIR/settings; and profendpoints_detach.  Commands: a file
 * $PE_SHIM_DIR/cmd holding "attach" or "detach" (written by the test,
 * renamed into place); the answer goes to $PE_SHIM_DIR/reply ("RC LINE"),
 * renamed into place, and cmd is removed before it.  Without ptrace the
 * program's threads are never stopped: what is tested here is the library's
 * side (the interposers after an attach), not the injector.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static char dir[512], lib[512];

static void
answer(int rc, const char *line)
{
    char tmp[600], path[600];
    FILE *f;

    snprintf(tmp, sizeof(tmp), "%s/reply.tmp", dir);
    snprintf(path, sizeof(path), "%s/reply", dir);
    if (!(f = fopen(tmp, "w")))
        return;
    fprintf(f, "%d %s\n", rc, line);
    fclose(f);
    rename(tmp, path);
}

static void *
shim(void *arg)
{
    char path[600], cmd[64], settings[4096], reply[512];
    void *h = NULL;

    prctl(PR_SET_NAME, "profep-attach", 0, 0, 0);
    snprintf(path, sizeof(path), "%s/cmd", dir);
    for (;;) {
        FILE *f = fopen(path, "r");
        size_t n;
        if (!f) {
            usleep(5000);
            continue;
        }
        n = fread(cmd, 1, sizeof(cmd) - 1, f);
        fclose(f);
        cmd[n] = '\0';
        unlink(path);
        reply[0] = '\0';
        if (!h && !(h = dlopen(lib, RTLD_NOW | RTLD_LOCAL))) {
            answer(-1, dlerror());
            continue;
        }
        if (!strncmp(cmd, "attach", 6)) {
            int (*at)(const char *, char *, size_t) =
                (int (*)(const char *, char *, size_t))dlsym(h, "profendpoints_attach");
            char sp[600];
            FILE *s;
            snprintf(sp, sizeof(sp), "%s/settings", dir);
            settings[0] = '\0';
            if ((s = fopen(sp, "r"))) {
                settings[fread(settings, 1, sizeof(settings) - 1, s)] = '\0';
                fclose(s);
            }
            answer(at ? at(settings, reply, sizeof(reply)) : -2, at ? reply : "no entry point");
        } else if (!strncmp(cmd, "detach", 6)) {
            int (*de)(char *, size_t) = (int (*)(char *, size_t))dlsym(h, "profendpoints_detach");
            answer(de ? de(reply, sizeof(reply)) : -2, de ? reply : "no entry point");
        } else {
            answer(-3, "unknown command");
        }
    }
    return NULL;
}

__attribute__((constructor)) static void
shim_start(void)
{
    const char *d = getenv("PE_SHIM_DIR"), *l = getenv("PE_SHIM_LIB");
    pthread_attr_t a;
    pthread_t t;

    if (!d || !l)
        return;
    snprintf(dir, sizeof(dir), "%s", d);
    snprintf(lib, sizeof(lib), "%s", l);
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_create(&t, &a, shim, NULL);
    pthread_attr_destroy(&a);
}
