/* p_host_nofile20: ulimit -n 20 (p_host_nofile.h). */
#define NOFILE 20
#include "p_host_nofile.h"
