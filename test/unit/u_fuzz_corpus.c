/*
 * u_fuzz_corpus: replays every input in test/unit/corpus/ (PE_CORPUS to override)
 * through the fuzz target, so that each crasher `make fuzz` ever found stays
 * a test (the ASan+UBSan build of make test runs it too), and checks the
 * fixes those inputs led to.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "pe_test.h"

#include "fuzz_params.c"

static int
replay(const char *dir)
{
    char path[1024], buf[65536];
    struct dirent *e;
    DIR *d = opendir(dir);
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d))) {
        FILE *f;
        size_t len;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (!(f = fopen(path, "rb")))
            continue;
        len = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
        n++;
    }
    closedir(d);
    return n;
}

int
main(void)
{
    const char *dir = getenv("PE_CORPUS") ? getenv("PE_CORPUS") : "test/unit/corpus";
    pe_req_t r;
    int n;

    n = replay(dir);
    CHECKF(n > 0, "no inputs in %s", dir);
    printf("replayed %d inputs from %s\n", n, dir);

    /* An encoded NUL would cut a value short ("token=SECRET%00x" compared as
       SECRET): the whole query is refused instead. */
    memset(&r, 0, sizeof(r));
    CHECK(pe_params_parse(&r, "token=s3cret%00x") == -EINVAL);
    CHECK(pe_params_parse(&r, "a%00=1") == -EINVAL);
    CHECK(pe_params_parse(&r, "duration=5%00junk") == -EINVAL);
    CHECK(pe_params_parse(&r, "x=%0") == 0 && !strcmp(pe_param(&r, "x"), "%0"));
    CHECK(pe_params_parse(&r, "x=%01") == 0 && !strcmp(pe_param(&r, "x"), "\001"));
    return pe_test_done();
}
