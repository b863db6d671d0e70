/* p_host_vmem400: ulimit -v 400000 (p_host_vmem.h). */
#define VMEM_KB 400000
#include "p_host_vmem.h"
