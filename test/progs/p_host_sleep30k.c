/* p_host_sleep30k: 30,000 sleeping threads, all listed (p_host_sleepers.h). */
#define SLEEPERS 30000
#include "p_host_sleepers.h"
