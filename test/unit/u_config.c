/*
 * u_config: the PROFEP_* value parsers; loading keeps defaults for bad values,
 * makes paths absolute at load, and refuses (no server) an unusable token or a
 * unix: address.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "pe_test.h"
#include "preload/config.h"

int
main(void)
{
    char host[96], out[64];
    int port, off, sig, b;
    int64_t sz;
    double d;

    CHECK(pe_cfg_parse_addr("127.0.0.1:16825", host, sizeof(host), &port, &off) == 0);
    CHECK(!strcmp(host, "127.0.0.1") && port == 16825 && !off);
    CHECK(pe_cfg_parse_addr("9000", host, sizeof(host), &port, &off) == 0 && port == 9000);
    CHECK(!strcmp(host, "127.0.0.1"));
    CHECK(pe_cfg_parse_addr("0.0.0.0:0", host, sizeof(host), &port, &off) == 0 && port == 0);
    CHECK(pe_cfg_parse_addr("off", host, sizeof(host), &port, &off) == 0 && off == 1);
    CHECK(pe_cfg_parse_addr("host:99999", host, sizeof(host), &port, &off) == -EINVAL);
    CHECK(pe_cfg_parse_addr(":80", host, sizeof(host), &port, &off) == 0 && port == 80);
    CHECK(!strcmp(host, "0.0.0.0")); /* Go's ":PORT": every interface */
    CHECK(pe_cfg_parse_addr(":0", host, sizeof(host), &port, &off) == 0 && port == 0);
    CHECK(pe_cfg_parse_addr(":", host, sizeof(host), &port, &off) == -EINVAL);
    CHECK(pe_cfg_parse_addr("h:8.5", host, sizeof(host), &port, &off) == -EINVAL);
    CHECK(pe_cfg_parse_addr("", host, sizeof(host), &port, &off) == -EINVAL);

    CHECK(pe_cfg_parse_size("524288", &sz) == 0 && sz == 524288);
    CHECK(pe_cfg_parse_size("512k", &sz) == 0 && sz == 524288);
    CHECK(pe_cfg_parse_size("1M", &sz) == 0 && sz == 1048576);
    CHECK(pe_cfg_parse_size("1e6", &sz) == 0 && sz == 1000000);
    CHECK(pe_cfg_parse_size("0", &sz) == 0 && sz == 0);
    CHECK(pe_cfg_parse_size("-1", &sz) == -EINVAL);
    CHECK(pe_cfg_parse_size("lots", &sz) == -EINVAL);
    CHECK(pe_cfg_parse_size("k", &sz) == -EINVAL);

    CHECK(pe_cfg_parse_seconds("0.5", &d) == 0 && d == 0.5);
    CHECK(pe_cfg_parse_seconds("0", &d) == -EINVAL);
    CHECK(pe_cfg_parse_seconds("nan", &d) == -EINVAL);

    CHECK(pe_cfg_parse_signal("USR1", &sig) == 0 && sig == SIGUSR1);
    CHECK(pe_cfg_parse_signal("SIGUSR2", &sig) == 0 && sig == SIGUSR2);
    CHECK(pe_cfg_parse_signal("10", &sig) == 0 && sig == 10);
    CHECK(pe_cfg_parse_signal("KILL", &sig) == -EINVAL);
    CHECK(pe_cfg_parse_signal("9", &sig) == -EINVAL);
    CHECK(pe_cfg_parse_signal("27", &sig) == -EINVAL); /* SIGPROF is the sampler's */

    CHECK(pe_cfg_parse_bool("off", &b) == 0 && b == 0);
    CHECK(pe_cfg_parse_bool("ON", &b) == 0 && b == 1);
    CHECK(pe_cfg_parse_bool("maybe", &b) == -EINVAL);

    CHECK(pe_cfg_expand_pid("/tmp/pe.%p", out, sizeof(out), 42) == 0 && !strcmp(out, "/tmp/pe.42"));
    CHECK(pe_cfg_expand_pid("%p-%p", out, sizeof(out), 7) == 0 && !strcmp(out, "7-7"));
    CHECK(pe_cfg_expand_pid("%p", out, 2, 123) == -ENAMETOOLONG);

    setenv("PROFEP_HEAP_RATE", "bogus", 1);
    setenv("PROFEP_MAX_SECONDS", "30", 1);
    setenv("PROFEP_ADDR", "8080", 1);
    setenv("PROFEP_LOG", "off", 1);
    pe_cfg_load();
    CHECK(pe_cfg.heap_rate == 524288);
    CHECK(pe_cfg.max_seconds == 30);
    CHECK(pe_cfg.port == 8080 && !strcmp(pe_cfg.host, "127.0.0.1"));
    CHECK(pe_cfg.children == 1);
    CHECK(!pe_cfg.refuse && !pe_cfg.token[0]);

    /* Paths are made absolute at load; a security setting that cannot be used refuses. */
    {
        char cwd[512], want[600];

        setenv("PROFEP_STAGE_DIR", "stage", 1);
        setenv("PROFEP_PORT_FILE", "pf.%p", 1);
        setenv("PROFEP_TLS_CERT", "k.pem", 1);
        setenv("PROFEP_ALLOWED_HOSTS", "A.example, b:1", 1);
        setenv("PROFEP_TOKEN", "", 1);
        memset(&pe_cfg, 0, sizeof(pe_cfg));
        pe_cfg_load();
        CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
        snprintf(want, sizeof(want), "%s/stage", cwd);
        CHECKF(!strcmp(pe_cfg.stage_dir, want), "%s", pe_cfg.stage_dir);
        snprintf(want, sizeof(want), "%s/pf.%d", cwd, (int)getpid());
        CHECKF(!strcmp(pe_cfg.port_file, want), "%s", pe_cfg.port_file);
        snprintf(want, sizeof(want), "%s/k.pem", cwd);
        CHECKF(!strcmp(pe_cfg.tls_cert, want), "%s", pe_cfg.tls_cert);
        CHECK(!strcmp(pe_cfg.allowed_hosts, "a.example,b:1"));
        CHECK(pe_cfg.refuse && pe_cfg.server_off); /* the empty token */
        setenv("PROFEP_TOKEN", "ok-token", 1);
        setenv("PROFEP_ADDR", "unix:/tmp/x.sock", 1);
        memset(&pe_cfg, 0, sizeof(pe_cfg));
        pe_cfg_load();
        CHECK(pe_cfg.refuse && pe_cfg.server_off && !strcmp(pe_cfg.token, "ok-token"));
        setenv("PROFEP_ADDR", "8080", 1);
        memset(&pe_cfg, 0, sizeof(pe_cfg));
        pe_cfg_load();
        CHECK(!pe_cfg.refuse && !pe_cfg.server_off);
    }
    return pe_test_done();
}
