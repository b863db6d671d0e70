/*
 * u_symdebug: a stripped library's static function is named from its
 * separate debug file, found by GNU build id (as Debian's -dbgsym packages
 * install them under /usr/lib/debug/.build-id/xx/yyyy.debug), and not named
 * without it; found too through a .gnu_debuglink beside it (gdb's search, the
 * one in symbols/elf.c).  libc's names carry no symbol version
 * (clock_nanosleep, not clock_nanosleep@@GLIBC_2.17 as libc6-dbg's .symtab
 * spells it).  Builds the library itself with cc, objcopy and strip.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pe_test.h"
#include "preload/real.h"
#include "profile/profile.h"
#include "symbols/symbols.h"

static int
sh(const char *cmd)
{
    int rc = system(cmd);

    if (rc != 0)
        fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
    return rc;
}

/* Build dir/NAME.so from symdebug_lib.c (with -D VARIANT so build ids differ),
   strip it, and with keep_debug 1 put its debug file under dbgdir by build id, with 2
   beside it as dir/NAME.debug, named by a .gnu_debuglink. */
static int
build_lib(const char *dir, const char *name, int variant, const char *dbgdir, int keep_debug)
{
    char cmd[4096];

    snprintf(cmd, sizeof(cmd),
             "set -e; lib=%s/%s.so; cc -shared -fPIC -O1 -g -Wl,--build-id -DVARIANT=%d -o $lib "
             "test/unit/symdebug_lib.c; id=$(readelf -n $lib | sed -n 's/.*Build ID: *//p'); "
             "if [ %d = 1 ]; then mkdir -p %s/$(echo $id | cut -c1-2); objcopy --only-keep-debug "
             "$lib %s/$(echo $id | cut -c1-2)/$(echo $id | cut -c3-).debug; fi; "
             "if [ %d = 2 ]; then objcopy --only-keep-debug $lib ${lib%%.so}.debug; fi; "
             "strip --strip-all $lib; ! readelf -S $lib | grep -q '\\.symtab'; "
             "if [ %d = 2 ]; then objcopy --add-gnu-debuglink=${lib%%.so}.debug $lib; fi",
             dir, name, variant, keep_debug, dbgdir, dbgdir, keep_debug, keep_debug);
    return sh(cmd);
}

/* The name of symdebug_static_leaf as the symbolizer sees it in dir/NAME.so. */
static const char *
leaf_name(const char *dir, const char *name, char *buf, size_t len)
{
    char path[512];
    void *(*leaf_addr)(void);
    const char *got;
    void *h;

    snprintf(path, sizeof(path), "%s/%s.so", dir, name);
    if (!(h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
        return "(dlopen failed)";
    leaf_addr = (void *(*)(void))dlsym(h, "symdebug_leaf_addr");
    got = leaf_addr ? pe_sym_symbolize((uintptr_t)leaf_addr() + 2, buf, len) : NULL;
    if (!got)
        snprintf(buf, len, "(unnamed)");
    else if (got != buf)
        snprintf(buf, len, "%s", got);
    dlclose(h);
    return buf;
}

int
main(void)
{
    char dir[] = "/tmp/pe-symdebug.XXXXXX", dbgdir[256], cmd[300], name[256];
    const char *got;

    pe_real_init();
    /* libc6-dbg's .symtab names clock_nanosleep@@GLIBC_2.17; without it the name has none */
    got = pe_sym_symbolize((uintptr_t)clock_nanosleep + 1, name, sizeof(name));
    CHECKF(got && !strchr(got, '@'), "no symbol version in libc's names (got %s)",
           got ? got : "(unnamed)");
    if (!mkdtemp(dir))
        return 77;
    snprintf(dbgdir, sizeof(dbgdir), "%s/debug/.build-id", dir);
    if (build_lib(dir, "with_debug", 1, dbgdir, 1) || build_lib(dir, "no_debug", 2, dbgdir, 0) ||
        build_lib(dir, "with_link", 3, dbgdir, 2)) {
        puts("cannot build the test libraries (cc, objcopy, strip)");
        return 77;
    }
    pe_sym_debug_dir = dbgdir;
    got = leaf_name(dir, "with_debug", name, sizeof(name));
    CHECKF(!strcmp(got, "symdebug_static_leaf"), "named from its debug file (got %s)", got);
    got = leaf_name(dir, "with_link", name, sizeof(name));
    CHECKF(!strcmp(got, "symdebug_static_leaf"), "named through its .gnu_debuglink (got %s)", got);
    got = leaf_name(dir, "no_debug", name, sizeof(name));
    CHECKF(strcmp(got, "symdebug_static_leaf") != 0, "unnamed without one (got %s)", got);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    sh(cmd);
    return pe_test_done();
}
