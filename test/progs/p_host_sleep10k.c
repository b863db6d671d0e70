/* p_host_sleep10k: 10,000 sleeping threads, all listed (p_host_sleepers.h). */
#define SLEEPERS 10000
#include "p_host_sleepers.h"
