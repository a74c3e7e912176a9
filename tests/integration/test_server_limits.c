/* What an idle or slow peer can hold of a zf_server (issue 17, finding 5):
 * a connection that never sends a request is closed after the first-request
 * deadline; one uid holds at most its share, and a new connection takes the
 * place of its connection idle the longest; a request being served is never
 * cut. Small limits, so each case takes well under a second. */
#include "harness.h"
#include "testutil.h"

#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static char path[256];
static pthread_mutex_t slow_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slow_cv = PTHREAD_COND_INITIALIZER;
static bool release_slow;

/* hello answers at once; list waits until release_slow (a long request). */
static char *handler(void *arg, const zf_request *req, const zf_peer *peer)
{
    (void)arg;
    (void)peer;
    if (req->op == ZF_OP_LIST) {
        pthread_mutex_lock(&slow_mu);
        while (!release_slow)
            pthread_cond_wait(&slow_cv, &slow_mu);
        pthread_mutex_unlock(&slow_mu);
    }
    return zf_response_ok("{}");
}

static zf_server *start(unsigned max_clients, unsigned max_per_uid, int first_ms)
{
    snprintf(path, sizeof path, "%s", zt_tmp_path("limits.sock"));
    zf_server_options o = {.path = path,
                           .max_clients = max_clients,
                           .max_per_uid = max_per_uid,
                           .first_request_timeout_ms = first_ms};
    zf_server *s = NULL;
    return zf_server_start(&o, handler, NULL, &s) == ZF_OK ? s : NULL;
}

static int raw(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%.100s", path);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The server closed fd within ms (a read sees the end, or an error
 * response followed by the end). */
static bool closed_within(int fd, int ms)
{
    uint64_t deadline = zf_clock_ns() + (uint64_t)ms * 1000000u;
    char buf[512];
    while (zf_clock_ns() < deadline) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 50) == 1) {
            ssize_t k = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (k <= 0)
                return true;
        }
    }
    return false;
}

/* One request of op on a connection of its own: answered ok. */
static bool call(zf_op op)
{
    zf_client *c = NULL;
    if (zf_client_connect(path, &c) != ZF_OK)
        return false;
    zf_request r = {.version = ZF_PROTOCOL_VERSION, .op = op};
    zf_config *resp = NULL;
    bool ok = zf_client_call(c, &r, &resp, 10000) == ZF_OK;
    if (ok && zf_config_bool(resp, "ok", false, &ok) != ZF_OK)
        ok = false;
    zf_config_free(resp);
    zf_client_close(c);
    return ok;
}

static bool hello(void)
{
    return call(ZF_OP_HELLO);
}

ZT_CASE(a_connection_that_never_speaks_is_closed_soon)
{
    zf_server *s = start(8, 0, 300);
    ZT_CHECK(s);
    int fd = raw();
    ZT_CHECK(fd >= 0);
    uint64_t t0 = zf_clock_ns();
    ZT_CHECK(closed_within(fd, 5000));
    double secs = (double)(zf_clock_ns() - t0) / 1e9;
    ZT_CHECK(secs >= 0.25);
    close(fd);
    ZT_CHECK(zf_server_stop(s));
}

ZT_CASE(one_uid_holds_its_share_and_new_clients_take_the_oldest_idle_place)
{
    zf_server *s = start(8, 2, 10000);
    ZT_CHECK(s);
    int a = raw();
    zt_sleep_ms(20);
    int b = raw();
    zt_sleep_ms(50);
    ZT_CHECK(a >= 0 && b >= 0);
    ZT_CHECK(hello());                /* a third connection of this uid: room made */
    ZT_CHECK(closed_within(a, 2000)); /* ... by closing the one idle the longest */
    ZT_CHECK(!closed_within(b, 200)); /* the other stays */
    close(a);
    close(b);
    ZT_CHECK(zf_server_stop(s));
}

typedef struct slow_call {
    bool ok;
} slow_call;

static void *slow_main(void *arg)
{
    slow_call *sc = arg;
    sc->ok = call(ZF_OP_LIST);
    return NULL;
}

ZT_CASE(a_request_being_served_is_never_cut)
{
    zf_server *s = start(2, 2, 10000);
    ZT_CHECK(s);
    release_slow = false;
    slow_call sc = {0};
    pthread_t t;
    ZT_OK(pthread_create(&t, NULL, slow_main, &sc));
    zt_sleep_ms(200); /* the slow request is being served */
    int idle = raw();
    zt_sleep_ms(50);
    ZT_CHECK(hello());                   /* full: the idle one made room, not the slow one */
    ZT_CHECK(closed_within(idle, 2000)); /* evicted */
    pthread_mutex_lock(&slow_mu);
    release_slow = true;
    pthread_cond_broadcast(&slow_cv);
    pthread_mutex_unlock(&slow_mu);
    pthread_join(t, NULL);
    ZT_CHECK(sc.ok); /* answered */
    close(idle);
    ZT_CHECK(zf_server_stop(s));
}

ZT_MAIN(ZT_ENTRY(a_connection_that_never_speaks_is_closed_soon),
        ZT_ENTRY(one_uid_holds_its_share_and_new_clients_take_the_oldest_idle_place),
        ZT_ENTRY(a_request_being_served_is_never_cut))
