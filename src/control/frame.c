/* Length-prefixed frames with timeouts (poll), never SIGPIPE. */
#include "control/frame.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int wait_fd(int fd, short events, int timeout_ms)
{
    struct pollfd p = {fd, events, 0};
    for (;;) {
        int r = poll(&p, 1, timeout_ms);
        if (r < 0 && errno == EINTR)
            continue;
        return r;
    }
}

zf_err zfi_frame_write(int fd, const char *data, size_t len, int timeout_ms)
{
    if (len > UINT32_MAX)
        return zfi_error(ZF_EINVAL, "frame of %zu bytes is too large", len);
    unsigned char hdr[4] = {(unsigned char)(len >> 24), (unsigned char)(len >> 16),
                            (unsigned char)(len >> 8), (unsigned char)len};
    uint64_t deadline = timeout_ms < 0 ? 0 : zf_clock_ns() + (uint64_t)timeout_ms * 1000000u;
    for (int part = 0; part < 2; part++) {
        const char *p = part ? data : (const char *)hdr;
        size_t n = part ? len : 4, off = 0;
        while (off < n) {
            int left = -1;
            if (deadline) {
                uint64_t now = zf_clock_ns();
                if (now >= deadline)
                    return zfi_error(ZF_ETIMEDOUT, "peer not reading");
                left = (int)((deadline - now) / 1000000u) + 1;
            }
            int r = wait_fd(fd, POLLOUT, left);
            if (r == 0)
                return zfi_error(ZF_ETIMEDOUT, "peer not reading");
            if (r < 0)
                return zfi_error(ZF_ESYS, "poll: %s", strerror(errno));
            ssize_t w = send(fd, p + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w < 0) {
                if (errno == EAGAIN || errno == EINTR)
                    continue;
                if (errno == EPIPE || errno == ECONNRESET)
                    return zfi_error(ZF_ECLOSED, "peer closed the connection");
                return zfi_error(ZF_ESYS, "send: %s", strerror(errno));
            }
            off += (size_t)w;
        }
    }
    return ZF_OK;
}

/* Milliseconds left until deadline_ns (0: no deadline -> -1, wait forever). */
static int left_ms(uint64_t deadline_ns)
{
    if (!deadline_ns)
        return -1;
    uint64_t now = zf_clock_ns();
    return now >= deadline_ns ? 0 : (int)((deadline_ns - now) / 1000000u) + 1;
}

/* Read exactly n bytes; *got counts what arrived (to tell a clean close
 * from a truncated frame). The first byte may take first_ms; once it came,
 * the whole rest must arrive by one deadline (a client trickling bytes
 * cannot hold the connection longer). */
static zf_err read_full(int fd, char *buf, size_t n, int first_ms, uint64_t *deadline_ns,
                        int rest_ms, size_t *got)
{
    *got = 0;
    while (*got < n) {
        int wait = *got || *deadline_ns ? left_ms(*deadline_ns) : first_ms;
        int r = wait == 0 ? 0 : wait_fd(fd, POLLIN, wait);
        if (r == 0)
            return ZF_ETIMEDOUT;
        if (r < 0)
            return zfi_error(ZF_ESYS, "poll: %s", strerror(errno));
        ssize_t k = recv(fd, buf + *got, n - *got, MSG_DONTWAIT);
        if (k == 0)
            return ZF_ECLOSED;
        if (k < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            if (errno == ECONNRESET)
                return ZF_ECLOSED;
            return zfi_error(ZF_ESYS, "recv: %s", strerror(errno));
        }
        if (!*deadline_ns && rest_ms >= 0)
            *deadline_ns = zf_clock_ns() + (uint64_t)rest_ms * 1000000u;
        *got += (size_t)k;
    }
    return ZF_OK;
}

zf_err zfi_frame_read(int fd, char **out, size_t *len, size_t max, int idle_ms, int rest_ms)
{
    *out = NULL;
    unsigned char hdr[4];
    size_t got;
    uint64_t deadline = 0; /* set when the frame's first byte arrives */
    zf_err e = read_full(fd, (char *)hdr, 4, idle_ms, &deadline, rest_ms, &got);
    if (e == ZF_ECLOSED && got == 0)
        return zfi_error(ZF_ECLOSED, "peer closed the connection");
    if (e == ZF_ETIMEDOUT && got == 0)
        return zfi_error(ZF_ETIMEDOUT, "no request within %d ms", idle_ms);
    if (e == ZF_ECLOSED || e == ZF_ETIMEDOUT)
        return zfi_error(ZF_EPROTO, "truncated frame: %zu of 4 header bytes arrived", got);
    if (e != ZF_OK)
        return e;
    size_t n = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
    if (n > max)
        return zfi_error(ZF_EINVAL, "a frame of %zu bytes exceeds the limit of %zu bytes", n, max);
    char *buf = malloc(n + 1);
    if (!buf)
        return zfi_error(ZF_ENOMEM, "out of memory for a frame of %zu bytes", n);
    e = read_full(fd, buf, n, rest_ms, &deadline, rest_ms, &got);
    if (e != ZF_OK) {
        free(buf);
        if (e == ZF_ECLOSED || e == ZF_ETIMEDOUT)
            return zfi_error(ZF_EPROTO, "truncated frame: %zu of %zu bytes arrived%s", got, n,
                             e == ZF_ETIMEDOUT ? " before the timeout" : "");
        return e;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return ZF_OK;
}
