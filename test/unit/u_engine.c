/*
 * u_engine: /debug_engine's limits (http/h_engine.c), in process: files are
 * 0600; of this process's files the newest 16 are kept and the byte limit
 * holds, oldest removed first; a file not ours (other names, or one put in
 * the place of ours) is never removed; a job past its deadline stops and
 * keeps nothing; a stage directory that could not be used answers 503.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "http/http_int.h"
#include "pe_test.h"
#include "preload/config.h"
#include "sampler/sampler.h"

static char stage[64];

typedef struct got_s {
    int status;
    char errmsg[256];
} got_t;

static got_t
engine(const char *body)
{
    got_t g = {0};

    g.status = pe_test_engine(body, g.errmsg);
    return g;
}

/* Files in the stage directory whose name starts with prefix; *mode_ok = all 0600. */
static int
count(const char *prefix, int *mode_ok)
{
    char path[512];
    struct dirent *de;
    struct stat st;
    DIR *d = opendir(stage);
    int n = 0;

    if (mode_ok)
        *mode_ok = 1;
    if (!d)
        return -1;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, prefix, strlen(prefix)))
            continue;
        n++;
        snprintf(path, sizeof(path), "%s/%s", stage, de->d_name);
        if (mode_ok && (lstat(path, &st) < 0 || (st.st_mode & 07777) != 0600))
            *mode_ok = 0;
    }
    closedir(d);
    return n;
}

static void
touch(const char *name, const char *text)
{
    char path[512];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", stage, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        if (write(fd, text, strlen(text)) < 0)
            perror("write");
        close(fd);
    }
}

static int
exists(const char *name)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/%s", stage, name);
    return access(path, F_OK) == 0;
}

int
main(void)
{
    static const char job[] = "{\"profile_type\": \"task_backtraces\"}";
    char ours[64], first[512], moved[sizeof(first) + 8];
    struct timespec t0, t1;
    got_t g;
    int i, n, mode_ok;
    double took;

    pe_cfg.max_seconds = 600;
    if (pe_sampler_init() < 0) {
        printf("skip: no sampler here\n");
        return 77;
    }
    snprintf(stage, sizeof(stage), "/tmp/u_engine.%d", (int)getpid());
    if (mkdir(stage, 0700) < 0)
        return 1;
    snprintf(pe_cfg.stage_dir, sizeof(pe_cfg.stage_dir), "%s", stage);
    snprintf(ours, sizeof(ours), "profep-tasks-%d-", (int)getpid());
    /* Files that are not ours: another process's, and one with our prefix we did not write. */
    touch("profep-tasks-1-AAAAAA.txt", "other process");
    touch("notes.txt", "an operator's file");

    g = engine(job);
    CHECKF(g.status == 200, "%d %s", g.status, g.errmsg);
    CHECK(count(ours, &mode_ok) == 1 && mode_ok);
    /* Remember the first file, then put another file in its place: not ours any more. */
    {
        DIR *d = opendir(stage);
        struct dirent *de;

        first[0] = '\0';
        while (d && (de = readdir(d)))
            if (!strncmp(de->d_name, ours, strlen(ours)))
                snprintf(first, sizeof(first), "%s/%s", stage, de->d_name);
        if (d)
            closedir(d);
        snprintf(moved, sizeof(moved), "%s.keep", first);
        CHECK(first[0] && rename(first, moved) == 0);
        touch(first + strlen(stage) + 1, "replaced by someone");
    }
    for (i = 0; i < 20; i++) {
        g = engine(job);
        if (g.status != 200)
            break;
    }
    CHECKF(g.status == 200, "%d %s", g.status, g.errmsg);
    /* 16 of ours kept (the replaced file is counted by its name too: it is not removed). */
    n = count(ours, &mode_ok);
    CHECKF(n == PE_ENGINE_MAX_FILES + 2, "%d files with our prefix (16 + the replaced one + .keep)",
           n);
    CHECKF(access(first, F_OK) == 0, "the file put in place of ours was not removed");
    CHECK(exists("profep-tasks-1-AAAAAA.txt") && exists("notes.txt"));

    /* The byte limit: only as many newest files as fit. */
    {
        struct stat st;
        char path[512];
        DIR *d = opendir(stage);
        struct dirent *de;
        off_t size = 0;

        while (d && (de = readdir(d)))
            if (!strncmp(de->d_name, ours, strlen(ours)) && !strstr(de->d_name, ".keep")) {
                snprintf(path, sizeof(path), "%s/%s", stage, de->d_name);
                if (strcmp(path, first) && stat(path, &st) == 0 && st.st_size > size)
                    size = st.st_size;
            }
        if (d)
            closedir(d);
        pe_http_engine_max_bytes = (int64_t)size * 3 + size / 2;
        g = engine(job);
        CHECKF(g.status == 200, "%d %s", g.status, g.errmsg);
        n = count(ours, NULL) - 2;
        CHECKF(n >= 1 && n <= 3, "%d files kept under %lld bytes (each about %lld)", n,
               (long long)pe_http_engine_max_bytes, (long long)size);
        /* A result larger than the limit is not kept at all. */
        pe_http_engine_max_bytes = 16;
        g = engine(job);
        CHECKF(g.status == 503 && strstr(g.errmsg, "passed 16 bytes"), "%d %s", g.status, g.errmsg);
        CHECK(count(ours, NULL) - 2 == n);
        pe_http_engine_max_bytes = 256LL << 20;
    }

    /* A job past its deadline: stopped at once, nothing kept. */
    pe_http_engine_deadline_s = 0.2;
    n = count(ours, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    g = engine("{\"profile_type\": \"wall_profile\", \"duration\": 5}");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECKF(g.status == 503 && strstr(g.errmsg, "deadline"), "%d %s", g.status, g.errmsg);
    CHECKF(took < 2, "the job stopped after %.2f s (deadline 0.2 s, asked 5 s)", took);
    CHECK(count(ours, NULL) == n);
    pe_http_engine_deadline_s = 0;

    /* Longer than a job may run: refused before anything starts. */
    g = engine("{\"profile_type\": \"wall_profile\", \"duration\": 300}");
    CHECKF(g.status == 400 && strstr(g.errmsg, "at most 120 s"), "%d %s", g.status, g.errmsg);

    /* A stage directory that could not be used: 503, nothing written elsewhere. */
    pe_cfg.stage_dir[0] = '\0';
    g = engine(job);
    CHECKF(g.status == 503 && strstr(g.errmsg, "PROFEP_STAGE_DIR could not be used"), "%d %s",
           g.status, g.errmsg);

    {
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf %s", stage);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", stage);
    }
    return pe_test_done();
}
