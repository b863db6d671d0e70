/* u_config: the PROFEP_* value parsers, and loading with bad values keeps defaults. */
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
    CHECK(pe_cfg_parse_addr(":80", host, sizeof(host), &port, &off) == -EINVAL);
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
    return pe_test_done();
}
