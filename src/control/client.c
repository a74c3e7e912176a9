/* The client side of the control protocol: connect, call, close. */
#include "control/frame.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct zf_client {
    int fd;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

void zf_control_default_socket(char *buf, size_t len)
{
    const char *env = getenv("ZF_SOCKET");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (env && *env)
        snprintf(buf, len, "%s", env);
    else if (xdg && *xdg)
        snprintf(buf, len, "%s/zflow/zfd.sock", xdg);
    else if (geteuid() == 0)
        snprintf(buf, len, "/run/zflow/zfd.sock");
    else
        snprintf(buf, len, "/tmp/zflow-%u/zfd.sock", (unsigned)geteuid());
}

zf_err zf_client_connect(const char *path, zf_client **out)
{
    if (!out)
        return zfi_error(ZF_EINVAL, "zf_client_connect: out is NULL");
    *out = NULL;
    zf_client *c = zfi_calloc(1, sizeof *c);
    if (!c)
        return zfi_error(ZF_ENOMEM, "out of memory");
    if (path)
        snprintf(c->path, sizeof c->path, "%s", path);
    else
        zf_control_default_socket(c->path, sizeof c->path);
    if (path && strlen(path) >= sizeof c->path) {
        free(c);
        return zfi_error(ZF_EINVAL, "socket path %s is longer than %zu bytes", path,
                         sizeof c->path - 1);
    }
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, c->path, sizeof a.sun_path);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        free(c);
        return zfi_error(ZF_ESYS, "socket: %s", strerror(errno));
    }
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0) {
        int e = errno;
        close(c->fd);
        zf_err code = e == ENOENT || e == ECONNREFUSED ? ZF_ENOTFOUND
                      : e == EACCES || e == EPERM      ? ZF_EPERM
                                                       : ZF_ESYS;
        zf_err r =
            zfi_error(code,
                      code == ZF_ENOTFOUND ? "no zfd is listening on %s"
                      : code == ZF_EPERM ? "not allowed to connect to %s (the socket is mode 0660: "
                                           "run as its owner or join its group)"
                                         : "cannot connect to %s",
                      c->path);
        free(c);
        return r;
    }
    *out = c;
    return ZF_OK;
}

zf_err zf_client_call(zf_client *c, const zf_request *req, zf_config **response, int timeout_ms)
{
    if (!c || !req || !response)
        return zfi_error(ZF_EINVAL, "zf_client_call: NULL argument");
    *response = NULL;
    char *text = zf_request_encode(req);
    if (!text)
        return zfi_error(ZF_EINVAL, "zf_client_call: cannot encode this request");
    zf_err e = zfi_frame_write(c->fd, text, strlen(text), timeout_ms);
    free(text);
    if (e != ZF_OK)
        return e;
    char *resp = NULL;
    size_t len = 0;
    e = zfi_frame_read(c->fd, &resp, &len, ZF_FRAME_MAX, timeout_ms,
                       timeout_ms < 0 ? 30000 : timeout_ms);
    if (e == ZF_ECLOSED)
        return zfi_error(ZF_ECLOSED, "the daemon closed the connection without answering");
    if (e == ZF_ETIMEDOUT)
        return zfi_error(ZF_ETIMEDOUT, "the daemon did not answer within %d ms", timeout_ms);
    if (e != ZF_OK)
        return e;
    zf_config *tree = NULL;
    e = zf_json_parse(resp, len, &tree);
    free(resp);
    if (e != ZF_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", zf_last_error());
        return zfi_error(ZF_EPROTO, "the daemon's answer is not JSON: %s", why);
    }
    if (zf_config_kind_of(tree) != ZF_CFG_MAP ||
        zf_config_kind_of(zf_config_get(tree, "ok")) != ZF_CFG_BOOL) {
        zf_config_free(tree);
        return zfi_error(ZF_EPROTO, "the daemon's answer has no 'ok' field");
    }
    *response = tree;
    return ZF_OK;
}

void zf_client_close(zf_client *c)
{
    if (!c)
        return;
    close(c->fd);
    free(c);
}
