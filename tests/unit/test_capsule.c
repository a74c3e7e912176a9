/* Capsules: references, pinning, static memory, copy on write, metadata. */
#include "harness.h"
#include "testutil.h"

#include "core/capsule.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static zf_pool *new_pool(uint64_t max)
{
    zf_pool_config cfg = {.max_bytes = max, .name = "test"};
    zf_pool *p = NULL;
    if (zf_pool_create(&cfg, &p) != ZF_OK)
        return NULL;
    return p;
}

static uint64_t in_use(zf_pool *p)
{
    zfi_pool_quarantine_flush(p);
    zf_pool_stats s;
    zf_pool_stats_get(p, &s);
    return s.bytes_in_use;
}

ZT_CASE(alloc_is_unique_and_writable)
{
    zf_pool *p = new_pool(0);
    ZT_CHECK(p);
    zf_data *d = NULL;
    ZT_OK(zf_pool_alloc(p, 100, &d));
    ZT_EQ(zf_data_len(d), 100);
    ZT_CHECK(zf_data_capacity(d) >= 100);
    ZT_CHECK(zf_data_is_unique(d));
    ZT_EQ(zf_data_timestamp(d), 0); /* no clock read in allocation: stamped when sent */
    void *w = zf_data_mut(&d);
    ZT_CHECK(w == zf_data_ptr(d)); /* unique: the same buffer, no copy */
    memset(w, 0xab, 100);
    ZT_CHECK(in_use(p) > 0);
    zf_data_unref(d);
    ZT_EQ(in_use(p), 0);
    zf_pool_destroy(p);
}

ZT_CASE(ref_unref_counts)
{
    zf_pool *p = new_pool(0);
    zf_data *d = NULL;
    ZT_OK(zf_pool_alloc(p, 64, &d));
    ZT_CHECK(zf_data_ref(d) == d);
    ZT_EQ(zf_data_refcount(d), 2);
    ZT_CHECK(!zf_data_is_unique(d));
    zf_data_unref(d);
    ZT_EQ(zf_data_refcount(d), 1);
    zf_data_unref(d);
    ZT_EQ(in_use(p), 0);
    zf_data_unref(NULL); /* no-op */
    zf_pool_destroy(p);
}

static atomic_int released;
static void count_release(void *arg)
{
    atomic_fetch_add(&released, 1);
    free(arg);
}

ZT_CASE(wrap_calls_release_exactly_once)
{
    atomic_store(&released, 0);
    zf_wrap_stats before, after;
    zf_wrap_stats_get(&before);
    char *buf = malloc(4096);
    memset(buf, 7, 4096);
    zf_data *d = NULL;
    ZT_OK(zf_data_wrap(buf, 4096, count_release, buf, &d));
    ZT_CHECK(zf_data_ptr(d) == buf); /* pinned, not copied */
    ZT_EQ(zf_data_len(d), 4096);
    zf_data *r1 = zf_data_ref(d), *r2 = zf_data_ref(d);
    zf_data_unref(d);
    zf_data_unref(r1);
    ZT_EQ(atomic_load(&released), 0);
    zf_data_unref(r2);
    ZT_EQ(atomic_load(&released), 1);
    zf_wrap_stats_get(&after);
    ZT_EQ(after.wrapped - before.wrapped, 1);
    ZT_EQ(after.released - before.released, 1);
}

static void *drop_on_other_thread(void *arg)
{
    zf_data_unref(arg);
    return NULL;
}

ZT_CASE(wrap_release_on_the_thread_dropping_last)
{
    atomic_store(&released, 0);
    char *buf = malloc(10);
    zf_data *d = NULL;
    ZT_OK(zf_data_wrap(buf, 10, count_release, buf, &d));
    pthread_t t;
    pthread_create(&t, NULL, drop_on_other_thread, d);
    pthread_join(t, NULL);
    ZT_EQ(atomic_load(&released), 1);
}

ZT_CASE(wrap_refuses_null_with_length)
{
    zf_data *d = (zf_data *)1;
    ZT_EQ(zf_data_wrap(NULL, 10, NULL, NULL, &d), ZF_EINVAL);
    ZT_CHECK(d == NULL);
}

static const char greeting[] = "hello, static world";

ZT_CASE(static_accepts_globals_refuses_stack)
{
    zf_data *d = NULL;
    ZT_OK(zf_data_static(greeting, sizeof greeting, &d));
    ZT_CHECK(zf_data_ptr(d) == greeting);
    zf_data_unref(d);

    char on_stack[32] = "temporary";
    d = NULL;
    ZT_EQ(zf_data_static(on_stack, sizeof on_stack, &d), ZF_EINVAL);
    ZT_CHECK(d == NULL);
    ZT_CONTAINS(zf_last_error(), "stack");
    ZT_CONTAINS(zf_last_error(), "zf_data_alloc");
    ZT_CONTAINS(zf_last_error(), "zf_data_wrap");
}

static void *static_from_thread(void *arg)
{
    char local[16] = "thread stack";
    zf_data *d = NULL;
    *(zf_err *)arg = zf_data_static(local, sizeof local, &d);
    return NULL;
}

ZT_CASE(static_refuses_another_threads_own_stack)
{
    zf_err e = ZF_OK;
    pthread_t t;
    pthread_create(&t, NULL, static_from_thread, &e);
    pthread_join(t, NULL);
    ZT_EQ(e, ZF_EINVAL);
}

ZT_CASE(mut_on_static_copies)
{
    zf_data *d = NULL;
    ZT_OK(zf_data_static(greeting, sizeof greeting, &d));
    char *w = zf_data_mut(&d);
    ZT_CHECK(w != NULL);
    ZT_CHECK(w != greeting); /* static memory is never written */
    ZT_STREQ(w, greeting);
    w[0] = 'J';
    ZT_EQ(greeting[0], 'h');
    zf_data_unref(d);
}

ZT_CASE(copy_on_write_leaves_original_untouched)
{
    zf_pool *p = new_pool(0);
    zf_data *a = NULL;
    ZT_OK(zf_pool_alloc(p, 256, &a));
    memset(zf_data_mut(&a), 'A', 256);
    ZT_OK(zf_data_set_seq(a, 42));
    zf_data *b = zf_data_ref(a);
    const void *orig = zf_data_ptr(a);
    char *w = zf_data_mut(&b);
    ZT_CHECK(w != NULL);
    ZT_CHECK(w != orig);
    ZT_CHECK(b != a);
    ZT_CHECK(zf_data_is_unique(b));
    ZT_CHECK(zf_data_is_unique(a)); /* b dropped its reference to a */
    ZT_EQ(zf_data_seq(b), 42);
    memset(w, 'B', 256);
    const char *ra = zf_data_ptr(a);
    for (int i = 0; i < 256; i++)
        ZT_EQ(ra[i], 'A');
    zf_data_unref(a);
    zf_data_unref(b);
    ZT_EQ(in_use(p), 0);
    zf_pool_destroy(p);
}

ZT_CASE(metadata_setters_need_unique)
{
    zf_pool *p = new_pool(0);
    zf_data *d = NULL;
    ZT_OK(zf_pool_alloc(p, 8, &d));
    ZT_OK(zf_data_set_timestamp(d, 123));
    ZT_EQ(zf_data_timestamp(d), 123);
    /* sending stamps only what has no stamp */
    zf_link *l = NULL;
    ZT_OK(zf_link_create(NULL, &l));
    zf_data *u = NULL;
    ZT_OK(zf_pool_alloc(p, 8, &u));
    uint64_t t0 = zf_clock_ns();
    ZT_OK(zf_link_push(l, &d, 0));
    ZT_OK(zf_link_push(l, &u, 0));
    ZT_OK(zf_link_try_pop(l, &d));
    ZT_OK(zf_link_try_pop(l, &u));
    ZT_EQ(zf_data_timestamp(d), 123);
    ZT_CHECK(zf_data_timestamp(u) >= t0);
    zf_data_unref(u);
    zf_link_destroy(l);
    zf_data *r = zf_data_ref(d);
    ZT_EQ(zf_data_set_seq(d, 1), ZF_ESTATE);
    ZT_EQ(zf_data_set_len(d, 4), ZF_ESTATE);
    zf_data_unref(r);
    ZT_OK(zf_data_set_len(d, 4));
    ZT_EQ(zf_data_len(d), 4);
    ZT_EQ(zf_data_set_len(d, 1u << 20), ZF_EINVAL);
    zf_data_unref(d);
    zf_pool_destroy(p);
}

/* A use after the last unref aborts with a message naming the capsule. */
ZT_CASE(use_after_unref_aborts_clearly)
{
    int fds[2];
    ZT_CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        zf_pool *p = NULL;
        zf_data *d = NULL;
        if (zf_pool_create(NULL, &p) != ZF_OK || zf_pool_alloc(p, 32, &d) != ZF_OK)
            _exit(3);
        zf_data_unref(d);
        zf_data_len(d); /* use after free: must abort */
        _exit(0);
    }
    close(fds[1]);
    char buf[1024];
    zt_read_all(fds[0], buf, sizeof buf);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    ZT_CHECK(WIFSIGNALED(status));
    ZT_EQ(WTERMSIG(status), SIGABRT);
    ZT_CONTAINS(buf, "zf_data_len");
    ZT_CONTAINS(buf, "used after its last zf_data_unref");
    ZT_CONTAINS(buf, "capsule 0x");
}

ZT_MAIN(ZT_ENTRY(use_after_unref_aborts_clearly), ZT_ENTRY(alloc_is_unique_and_writable),
        ZT_ENTRY(ref_unref_counts), ZT_ENTRY(wrap_calls_release_exactly_once),
        ZT_ENTRY(wrap_release_on_the_thread_dropping_last), ZT_ENTRY(wrap_refuses_null_with_length),
        ZT_ENTRY(static_accepts_globals_refuses_stack),
        ZT_ENTRY(static_refuses_another_threads_own_stack), ZT_ENTRY(mut_on_static_copies),
        ZT_ENTRY(copy_on_write_leaves_original_untouched), ZT_ENTRY(metadata_setters_need_unique))
