/*
 * p_attach_dlopen.c: a library loaded after the attach (e2e_attach_dlopen.sh).
 * Prints "libc_malloc ADDR", "libc_free ADDR" and "waiting"; once the file named by argv[1]
 * exists it dlopens argv[2] (libpe_attach_plugin.so), keeps 64 MiB from it
 * (plugin_keep), prints "kept N" and "loaded"; when stdin closes it frees
 * them and exits 0.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    char buf[64];
    void *h;
    long (*keep)(long);
    void (*release)(void);

    if (argc < 3)
        return 2;
    printf("libc_malloc %p\nlibc_free %p\nwaiting\n", dlsym(RTLD_DEFAULT, "malloc"),
           dlsym(RTLD_DEFAULT, "free"));
    fflush(stdout);
    for (int i = 0; i < 120000 && access(argv[1], F_OK) != 0; i++)
        usleep(1000);
    if (!(h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL))) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    keep = (long (*)(long))dlsym(h, "plugin_keep");
    release = (void (*)(void))dlsym(h, "plugin_release");
    printf("kept %ld\nloaded\n", keep(64L << 20));
    fflush(stdout);
    while (read(0, buf, sizeof(buf)) > 0)
        ;
    release();
    return 0;
}
