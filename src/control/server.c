/* The server side of the control protocol: a Unix socket (mode 0660), one
 * thread per connection, every request bounded in size and time. Nothing a
 * client sends can crash or wedge the server: malformed, truncated, huge
 * or slow requests get an error response (when the stream still allows
 * one), are logged, and the other clients keep being served. */
#include "control/frame.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

typedef struct conn {
    int fd;
    zf_peer peer;
    struct zf_server *s;
    struct conn *next;
} conn;

struct zf_server {
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int lfd;
    int wake[2];
    pthread_t accept_thread;
    zf_server_handler handler;
    void *arg;
    zf_server_options opt;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned active;
    bool stopping;
    conn *conns;
};

const char *zf_server_path(const zf_server *s)
{
    return s ? s->path : NULL;
}

/* Root, the daemon's own user, and members of the socket's group. */
static bool authorized(const zf_server *s, const zf_peer *p)
{
    if (p->uid == 0 || p->uid == geteuid())
        return true;
    struct stat st;
    if (stat(s->path, &st) != 0)
        return false;
    if (p->gid == st.st_gid)
        return true;
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/status", p->pid);
    FILE *f = fopen(path, "r");
    bool member = false;
    while (f && !member && fgets(line, sizeof line, f)) {
        if (strncmp(line, "Groups:", 7) != 0)
            continue;
        char *save = NULL;
        for (char *t = strtok_r(line + 7, " \t\n", &save); t && !member;
             t = strtok_r(NULL, " \t\n", &save))
            member = (unsigned)strtoul(t, NULL, 10) == (unsigned)st.st_gid;
    }
    if (f)
        fclose(f);
    return member;
}

static void reply_error(conn *c, zf_err code, const char *msg)
{
    char *r = zf_response_error(code, "%s", msg);
    if (r) {
        zfi_frame_write(c->fd, r, strlen(r), 1000);
        free(r);
    }
}

static void serve(conn *c)
{
    zf_server *s = c->s;
    for (;;) {
        char *text = NULL;
        size_t len = 0;
        zf_err e = zfi_frame_read(c->fd, &text, &len, ZF_FRAME_MAX, s->opt.idle_timeout_ms,
                                  s->opt.request_timeout_ms);
        if (e == ZF_ECLOSED || e == ZF_ETIMEDOUT)
            return; /* between requests: a normal end */
        if (e != ZF_OK) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", zf_last_error());
            zfi_log(ZF_LOG_WARN, "control", "request from pid %d refused: %s", c->peer.pid, msg);
            reply_error(c, e == ZF_EINVAL ? ZF_EINVAL : ZF_EPROTO, msg);
            return; /* the stream cannot be trusted any more */
        }
        char err[512];
        zf_request *req = NULL;
        e = zf_request_decode(text, len, &req, err, sizeof err);
        free(text);
        char *resp;
        if (e != ZF_OK) {
            zfi_log(ZF_LOG_WARN, "control", "malformed request from pid %d: %s", c->peer.pid,
                    err[0] ? err : zf_last_error());
            resp = zf_response_error(e, "%s", err[0] ? err : zf_last_error());
        } else {
            zfi_log(ZF_LOG_DEBUG, "control", "%s from pid %d", zf_op_name(req->op), c->peer.pid);
            resp = s->handler(s->arg, req, &c->peer);
            zf_request_free(req);
            if (!resp)
                resp = zf_response_error(ZF_ENOMEM, "the daemon ran out of memory");
        }
        if (!resp)
            return;
        e = zfi_frame_write(c->fd, resp, strlen(resp), 5000);
        free(resp);
        if (e != ZF_OK)
            return;
    }
}

static void *conn_main(void *arg)
{
    conn *c = arg;
    zf_server *s = c->s;
    serve(c);
    pthread_mutex_lock(&s->mu);
    for (conn **p = &s->conns; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    close(c->fd);
    free(c);
    s->active--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void accept_one(zf_server *s)
{
    int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
            zfi_log(ZF_LOG_WARN, "control", "accept: %s", strerror(errno));
        if (errno == EMFILE || errno == ENFILE)
            usleep(100000); /* out of descriptors: let connections finish */
        return;
    }
    conn tmp = {.fd = fd, .s = s};
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0)
        tmp.peer = (zf_peer){cred.pid, cred.uid, cred.gid};
    if (!authorized(s, &tmp.peer)) {
        zfi_log(ZF_LOG_WARN, "control",
                "connection from uid %u (pid %d) refused: not the "
                "daemon's user, root, or in the socket's group",
                tmp.peer.uid, tmp.peer.pid);
        reply_error(&tmp, ZF_EPERM,
                    "permission denied: this daemon serves its own user, root "
                    "and the socket's group");
        close(fd);
        return;
    }
    pthread_mutex_lock(&s->mu);
    bool full = s->active >= s->opt.max_clients;
    pthread_mutex_unlock(&s->mu);
    if (full) {
        zfi_log(ZF_LOG_WARN, "control", "connection from pid %d refused: %u clients already",
                tmp.peer.pid, s->opt.max_clients);
        reply_error(&tmp, ZF_EBUSY, "too many clients; try again");
        close(fd);
        return;
    }
    conn *c = zfi_calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return;
    }
    *c = tmp;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_mutex_lock(&s->mu);
    c->next = s->conns;
    s->conns = c;
    s->active++;
    pthread_t t;
    int e = pthread_create(&t, &a, conn_main, c);
    if (e != 0) {
        s->conns = c->next;
        s->active--;
    }
    pthread_mutex_unlock(&s->mu);
    pthread_attr_destroy(&a);
    if (e != 0) {
        zfi_log(ZF_LOG_WARN, "control", "cannot start a connection thread: %s", strerror(e));
        close(fd);
        free(c);
    }
}

static void *accept_main(void *arg)
{
    zf_server *s = arg;
    struct pollfd p[2] = {{s->lfd, POLLIN, 0}, {s->wake[0], POLLIN, 0}};
    for (;;) {
        int r = poll(p, 2, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || (p[1].revents & POLLIN))
            return NULL;
        if (p[0].revents & POLLIN)
            accept_one(s);
    }
}

/* The socket's folder: created (mode 0750, parents 0755) when missing; an
 * existing one must be owned by this user (or root) and writable by nobody
 * else, or another user could replace the socket. */
static zf_err make_parent(const char *path)
{
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return ZF_OK;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        mkdir(dir, 0755);
        *p = '/';
    }
    if (mkdir(dir, 0750) != 0 && errno != EEXIST)
        return zfi_error(ZF_ESYS, "cannot create %s: %s", dir, strerror(errno));
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return zfi_error(ZF_EPERM, "%s is not a folder", dir);
    bool sticky_shared = (st.st_mode & S_ISVTX) && st.st_uid == 0; /* like /tmp */
    if (!sticky_shared && ((st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 022)))
        return zfi_error(ZF_EPERM,
                         "%s is owned by uid %u with mode %04o: the socket's folder must belong "
                         "to this user (or root) and be writable by no one else",
                         dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    return ZF_OK;
}

zf_err zf_server_start(const zf_server_options *opt, zf_server_handler handler, void *arg,
                       zf_server **out)
{
    if (!handler || !out)
        return zfi_error(ZF_EINVAL, "zf_server_start: NULL argument");
    *out = NULL;
    zf_server *s = zfi_calloc(1, sizeof *s);
    if (!s)
        return zfi_error(ZF_ENOMEM, "out of memory");
    if (opt)
        s->opt = *opt;
    s->opt.mode = s->opt.mode ? s->opt.mode : 0660;
    s->opt.max_clients = s->opt.max_clients ? s->opt.max_clients : 64;
    s->opt.idle_timeout_ms = s->opt.idle_timeout_ms ? s->opt.idle_timeout_ms : 60000;
    s->opt.request_timeout_ms = s->opt.request_timeout_ms ? s->opt.request_timeout_ms : 5000;
    s->handler = handler;
    s->arg = arg;
    s->lfd = s->wake[0] = s->wake[1] = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    zf_err err;
    if (opt && opt->path) {
        if (strlen(opt->path) >= sizeof s->path) {
            err = zfi_error(ZF_EINVAL, "socket path %s is longer than %zu bytes", opt->path,
                            sizeof s->path - 1);
            goto fail;
        }
        snprintf(s->path, sizeof s->path, "%s", opt->path);
    } else {
        zf_control_default_socket(s->path, sizeof s->path);
    }
    if ((err = make_parent(s->path)) != ZF_OK)
        goto fail;
    struct stat st;
    if (lstat(s->path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            err = zfi_error(ZF_EEXIST, "%s exists and is not a socket", s->path);
            goto fail;
        }
        zf_client *probe = NULL;
        if (zf_client_connect(s->path, &probe) == ZF_OK) {
            zf_client_close(probe);
            err = zfi_error(ZF_EBUSY, "a daemon is already listening on %s", s->path);
            goto fail;
        }
        unlink(s->path); /* stale, from a daemon that died */
    }
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, s->path, sizeof a.sun_path);
    s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    /* Created with its final mode (no window where it is more open). */
    mode_t old_mask = umask(0777 & ~s->opt.mode);
    int bound = s->lfd >= 0 ? bind(s->lfd, (struct sockaddr *)&a, sizeof a) : -1;
    umask(old_mask);
    if (bound != 0 || chmod(s->path, s->opt.mode) != 0 || listen(s->lfd, 128) != 0 ||
        pipe2(s->wake, O_CLOEXEC) != 0) {
        err = zfi_error(ZF_ESYS, "cannot listen on %s: %s", s->path, strerror(errno));
        goto fail;
    }
    int e = pthread_create(&s->accept_thread, NULL, accept_main, s);
    if (e != 0) {
        err = zfi_error(ZF_ESYS, "cannot start the accept thread: %s", strerror(e));
        unlink(s->path);
        goto fail;
    }
    zfi_log(ZF_LOG_INFO, "control", "listening on %s (mode %04o)", s->path, s->opt.mode);
    *out = s;
    return ZF_OK;
fail:
    if (s->lfd >= 0)
        close(s->lfd);
    if (s->wake[0] >= 0) {
        close(s->wake[0]);
        close(s->wake[1]);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    return err;
}

bool zf_server_stop(zf_server *s)
{
    if (!s)
        return true;
    ssize_t w = write(s->wake[1], "x", 1);
    (void)w;
    pthread_join(s->accept_thread, NULL);
    close(s->lfd);
    unlink(s->path);
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    for (conn *c = s->conns; c; c = c->next)
        shutdown(c->fd, SHUT_RDWR); /* wakes their reads; a handler in progress finishes */
    uint64_t deadline = zf_clock_ns() + 30000000000ull;
    while (s->active && zf_clock_ns() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    unsigned left = s->active;
    pthread_mutex_unlock(&s->mu);
    close(s->wake[0]);
    close(s->wake[1]);
    if (left) {
        zfi_log(ZF_LOG_WARN, "control", "%u connections still busy at stop: leaving them", left);
        return false; /* their threads still reference s */
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    return true;
}
