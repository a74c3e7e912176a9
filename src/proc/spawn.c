/* Starting node hosts (posix_spawn of the installed zf-node-host), seeing
 * them end (a pidfd), reaping them. */
#include "proc/spawn.h"

#include "core/common.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef ZF_NODE_HOST_INSTALLED
#define ZF_NODE_HOST_INSTALLED "/usr/local/libexec/zflow/zf-node-host"
#endif

extern char **environ;

static char host_path[PATH_MAX];

static bool executable(const char *p)
{
    return p && *p && access(p, X_OK) == 0;
}

const char *zfi_host_path(void)
{
    const char *env = getenv("ZF_NODE_HOST");
    if (env && *env) {
        if (executable(env))
            return env;
        zfi_error(ZF_ENOTFOUND, "ZF_NODE_HOST=%s is not an executable file", env);
        return NULL;
    }
    Dl_info info;
    char dir[PATH_MAX] = "";
    if (dladdr((void *)(uintptr_t)zfi_host_path, &info) && info.dli_fname) {
        snprintf(dir, sizeof dir, "%s", info.dli_fname);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof dir, ".");
    }
    char a[PATH_MAX + 64], b[PATH_MAX + 64];
    snprintf(a, sizeof a, "%s/zf-node-host", dir);
    snprintf(b, sizeof b, "%s/../libexec/zflow/zf-node-host", dir);
    const char *cands[] = {a, b, ZF_NODE_HOST_INSTALLED};
    for (size_t i = 0; i < ZFI_ARRAY_LEN(cands); i++)
        if (dir[0] || i == 2) {
            int k =
                executable(cands[i]) ? snprintf(host_path, sizeof host_path, "%s", cands[i]) : -1;
            if (k > 0 && (size_t)k < sizeof host_path) /* a longer path is not usable */
                return host_path;
        }
    zfi_error(ZF_ENOTFOUND,
              "the node host zf-node-host is not installed: looked for %s, %s and %s (set "
              "ZF_NODE_HOST to its path)",
              a, b, ZF_NODE_HOST_INSTALLED);
    return NULL;
}

static void close_pair(int p[2])
{
    for (int i = 0; i < 2; i++)
        if (p[i] >= 0)
            close(p[i]);
}

zf_err zfi_child_spawn(const char *label, zfi_child *out)
{
    out->pid = -1;
    out->pidfd = out->sock = out->out = out->err = -1;
    const char *host = zfi_host_path();
    if (!host)
        return ZF_ENOTFOUND;
    int sv[2], po[2] = {-1, -1}, pe[2] = {-1, -1};
    if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0) {
        zf_err pe_err = zfi_error(ZF_ESYS, "pipe2: %s", strerror(errno));
        close_pair(po);
        close_pair(pe);
        return pe_err;
    }
    /* The runtime's ends never block its reader; the child's stay blocking. */
    fcntl(po[0], F_SETFL, O_NONBLOCK);
    fcntl(pe[0], F_SETFL, O_NONBLOCK);
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        zf_err se = zfi_error(ZF_ESYS, "socketpair: %s", strerror(errno));
        close_pair(po);
        close_pair(pe);
        return se;
    }
    int bufsz = 1 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof bufsz);
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof bufsz);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    /* dup2 onto 3 clears close-on-exec for the child's copy; nothing else
     * of this process (a daemon's client sockets...) goes along. */
    posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
    posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
    posix_spawn_file_actions_addclosefrom_np(&fa, 4);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    /* Default dispositions: a node host must die of the signals that kill. */
    posix_spawnattr_setsigdefault(&at, &all);
    /* A process group of its own: what the node forks goes with it when it
     * ends (zfi_child_reap), and a terminal's ^C reaches the runtime only. */
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                      POSIX_SPAWN_SETPGROUP);
    char *argv[] = {(char *)"zf-node-host", (char *)label, NULL};
    pid_t pid;
    int e = posix_spawn(&pid, host, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(sv[1]);
    close(po[1]);
    close(pe[1]);
    if (e != 0) {
        close(sv[0]);
        close(po[0]);
        close(pe[0]);
        return zfi_error(ZF_ESYS, "starting %s: %s", host, strerror(e));
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        e = errno;
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(sv[0]);
        close(po[0]);
        close(pe[0]);
        return zfi_error(ZF_ESYS, "pidfd_open: %s (Linux 5.3 or later is needed)", strerror(e));
    }
    fcntl(pidfd, F_SETFD, FD_CLOEXEC);
    out->pid = pid;
    out->pidfd = pidfd;
    out->sock = sv[0];
    out->out = po[0];
    out->err = pe[0];
    return ZF_OK;
}

void zfi_child_kill(const zfi_child *c)
{
    if (c->pidfd >= 0)
        syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
}

#define PF_EXITING_FLAG 0x4u /* include/linux/sched.h: getting shut down */

bool zfi_child_exiting(const zfi_child *c)
{
    char path[64], st[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)c->pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, st, sizeof st - 1) : -1;
    if (fd >= 0)
        close(fd);
    /* Asked after the read: a child not yet ended then was not reaped when
     * its file was read, so the pid named it, not a process that took the
     * number after its reaping (which another thread may be doing). */
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PIDFD, (id_t)c->pidfd, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid != 0)
        return true; /* ended, or reaped already */
    if (n <= 0)
        return true;
    st[n] = '\0';
    /* After the name (which may hold spaces and parentheses): state,
     * ppid, pgrp, session, tty_nr, tpgid, then flags. */
    const char *p = strrchr(st, ')');
    unsigned flags = 0;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %u", &flags) != 1)
        return true;
    return (flags & PF_EXITING_FLAG) != 0;
}

void zfi_child_reap(zfi_child *c, char *why, size_t len, bool *failed, int *sig)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    *failed = true;
    *sig = 0;
    /* Whatever the node forked (its process group; a process that left the
     * group with setsid escapes this) goes too. Between its end and its
     * reaping (WNOWAIT): the zombie still holds the group's id, so the
     * signal names no one else. (A child reaped already, SIGCHLD ignored by
     * the application: no group kill.) */
    siginfo_t z;
    memset(&z, 0, sizeof z);
    int zr;
    do
        zr = waitid(P_PIDFD, (id_t)c->pidfd, &z, WEXITED | WNOWAIT);
    while (zr < 0 && errno == EINTR);
    if (zr == 0)
        kill(-c->pid, SIGKILL);
    int r;
    do
        r = waitid(P_PIDFD, (id_t)c->pidfd, &si, WEXITED);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
        snprintf(why, len, "ended (waitid: %s)", strerror(errno));
        return;
    }
    if (si.si_code == CLD_EXITED) {
        *failed = si.si_status != 0;
        if (si.si_status == 0)
            snprintf(why, len, "exited normally");
        else
            snprintf(why, len, "exited with status %d", si.si_status);
    } else {
        *sig = si.si_status;
        const char *name = sigabbrev_np(si.si_status);
        snprintf(why, len, "killed by signal %d (SIG%s)%s", si.si_status, name ? name : "?",
                 si.si_code == CLD_DUMPED ? ", core dumped" : "");
    }
}

void zfi_child_close(zfi_child *c)
{
    if (c->sock >= 0)
        close(c->sock);
    if (c->pidfd >= 0)
        close(c->pidfd);
    if (c->out >= 0)
        close(c->out);
    if (c->err >= 0)
        close(c->err);
    c->sock = c->pidfd = c->out = c->err = -1;
}
