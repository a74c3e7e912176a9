/* Asymmetric fences over membarrier(2) (asym.h). */
#include "core/asym.h"

#include "core/common.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

bool zfi_asym_available;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void do_init(void)
{
    zfi_asym_available =
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
}

void zfi_asym_init(void)
{
    pthread_once(&once, do_init);
}

void zfi_asym_barrier(void)
{
    int tries = 0;
    while (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
        if (++tries == 100) /* it worked at registration: ENOMEM, again and again */
            zfi_fatal("asym", "membarrier failed 100 times: %s", strerror(errno));
}
