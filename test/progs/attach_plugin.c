/*
 * attach_plugin.c: a library p_attach_dlopen loads after the attach
 * (built as build/test/libpe_attach_plugin.so with -z now -z relro, so its
 * slots sit on a read-only page).  plugin_site keeps `total` bytes in 64 KiB
 * blocks; plugin_release frees them.
 */
#include <stdlib.h>
#include <string.h>

static void *kept[1 << 16];
static int nkept;

__attribute__((noinline)) void *
plugin_site(size_t n)
{
    void *p = malloc(n);

    if (p)
        memset(p, 7, 64);
    return p;
}

long
plugin_keep(long total)
{
    long done = 0;

    while (done < total && nkept < (1 << 16)) {
        if (!(kept[nkept] = plugin_site(65536)))
            break;
        nkept++;
        done += 65536;
    }
    return done;
}

void
plugin_release(void)
{
    while (nkept > 0)
        free(kept[--nkept]);
}
