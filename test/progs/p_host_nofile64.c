/* p_host_nofile64: ulimit -n 64 (p_host_nofile.h). */
#define NOFILE 64
#include "p_host_nofile.h"
