/* p_host_vmem200: ulimit -v 200000 (p_host_vmem.h). */
#define VMEM_KB 200000
#include "p_host_vmem.h"
