/* Starting and ending node-host processes. */
#ifndef ZFI_PROC_SPAWN_H
#define ZFI_PROC_SPAWN_H

#include "zflow/zflow.h"

#include <stdbool.h>
#include <sys/types.h>

typedef struct zfi_child {
    pid_t pid;
    int pidfd; /* readable once the child has ended */
    int sock;  /* the runtime's end of the control channel */
    int out;   /* read ends (non-blocking) of pipes that are the child's */
    int err;   /* stdout and stderr; -1 once closed */
} zfi_child;

/* The node-host program: $ZF_NODE_HOST if set, else zf-node-host next to
 * libzflow (a build tree), else <libdir>/../libexec/zflow/zf-node-host, else
 * the installed path compiled in. NULL (zf_last_error says where it looked)
 * if none is executable. The string is static. */
const char *zfi_host_path(void);

/* Start the host with the child's end of a fresh socket pair as fd 3, pipes
 * as its stdout and stderr (out->out, out->err: the caller reads them, so
 * what the node prints lands in its log), and `label` (node and instance,
 * for ps) as its argument. ZF_ESYS on failure (nothing left open). */
zf_err zfi_child_spawn(const char *label, zfi_child *out);
/* SIGKILL it (if it still runs); the pidfd makes this race-free. */
void zfi_child_kill(const zfi_child *c);
/* Whether it has begun to end (the kernel's PF_EXITING, in /proc/PID/stat):
 * a process closes its files as it exits, before its pidfd signals. True
 * when that cannot be read (it is gone). Safe while another thread reaps it. */
bool zfi_child_exiting(const zfi_child *c);
/* Reap it (after the pidfd signalled), and SIGKILL what is left of its
 * process group (what the node forked): "killed by signal 11 (SIGSEGV)",
 * "exited with status 3", "exited normally" into why; *failed unless it
 * exited with status 0. Blocks until it has ended. */
void zfi_child_reap(zfi_child *c, char *why, size_t len, bool *failed, int *sig);
/* Close what is left (the socket, the pidfd, the output pipes). */
void zfi_child_close(zfi_child *c);

#endif
