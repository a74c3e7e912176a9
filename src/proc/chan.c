/* The control channel (chan.h). */
#include "proc/chan.h"

#include "core/common.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct hdr {
    uint32_t type;
    uint32_t len;
} hdr;

bool zfi_msg_send(int sock, uint32_t type, const void *data, size_t len, const int *fds,
                  size_t n_fds)
{
    if (len > ZFI_MSG_MAX || n_fds > ZFI_MSG_MAX_FDS) {
        errno = EMSGSIZE;
        return false;
    }
    hdr h = {type, (uint32_t)len};
    struct iovec iov[2] = {{&h, sizeof h}, {(void *)data, len}};
    union {
        char buf[CMSG_SPACE(sizeof(int) * ZFI_MSG_MAX_FDS)];
        struct cmsghdr align;
    } u;
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
    if (n_fds) {
        memset(&u, 0, sizeof u);
        mh.msg_control = u.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
    }
    for (;;) {
        ssize_t k = sendmsg(sock, &mh, MSG_NOSIGNAL);
        if (k >= 0)
            return (size_t)k == sizeof h + len;
        if (errno != EINTR)
            return false;
    }
}

int zfi_msg_recv(int sock, zfi_msg *m, bool block, bool *closed)
{
    memset(m, 0, sizeof *m);
    if (closed)
        *closed = false;
    char *buf = malloc(sizeof(hdr) + ZFI_MSG_MAX + 1);
    if (!buf)
        return -1;
    struct iovec iov = {buf, sizeof(hdr) + ZFI_MSG_MAX};
    union {
        char b[CMSG_SPACE(sizeof(int) * ZFI_MSG_MAX_FDS)];
        struct cmsghdr align;
    } u;
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof u.b};
    ssize_t k;
    do
        k = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | (block ? 0 : MSG_DONTWAIT));
    while (k < 0 && errno == EINTR);
    /* Descriptors that came along are ours even if the message is bad. */
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); k >= 0 && c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            int fds[ZFI_MSG_MAX_FDS * 2];
            if (n > ZFI_ARRAY_LEN(fds))
                n = ZFI_ARRAY_LEN(fds);
            memcpy(fds, CMSG_DATA(c), n * sizeof(int));
            for (size_t i = 0; i < n; i++) {
                if (m->n_fds < ZFI_MSG_MAX_FDS)
                    m->fds[m->n_fds++] = fds[i];
                else
                    close(fds[i]);
            }
        }
    if (k <= 0) {
        bool none = k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
        if (!none && closed) /* ended, or reset by a peer that died */
            *closed = true;
        free(buf);
        return 0;
    }
    hdr h;
    if (k < (ssize_t)sizeof h || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
        goto bad;
    memcpy(&h, buf, sizeof h);
    if ((size_t)k != sizeof h + h.len)
        goto bad;
    memmove(buf, buf + sizeof h, h.len);
    buf[h.len] = '\0';
    m->type = h.type;
    m->len = h.len;
    m->data = buf;
    return 1;
bad:
    free(buf);
    zfi_msg_free(m);
    return -1;
}

void zfi_msg_free(zfi_msg *m)
{
    for (size_t i = 0; i < m->n_fds; i++)
        if (m->fds[i] >= 0)
            close(m->fds[i]);
    free(m->data);
    memset(m, 0, sizeof *m);
}

int zfi_chan_wait(int sock, int pidfd, int64_t timeout_ns)
{
    uint64_t deadline = timeout_ns >= 0 ? zf_clock_ns() + (uint64_t)timeout_ns : 0;
    for (;;) {
        struct pollfd p[2] = {{sock, POLLIN, 0}, {pidfd, POLLIN, 0}};
        int ms = -1;
        if (timeout_ns >= 0) {
            uint64_t now = zf_clock_ns();
            if (now >= deadline)
                return 0;
            ms = (int)((deadline - now + 999999) / 1000000);
        }
        int k = poll(p, pidfd >= 0 ? 2 : 1, ms);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0)
            continue; /* the deadline check above ends it */
        if (p[0].revents & POLLIN)
            return 1;
        if (p[0].revents & (POLLHUP | POLLERR) || (pidfd >= 0 && p[1].revents))
            return -1;
    }
}
