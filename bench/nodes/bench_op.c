/* zf-bench's operator: forwards each capsule (the same one: no copy).
 *
 * With `stamps` (the name of a POSIX shared memory of `stamps_n` uint64,
 * zf-bench hop --isolated's lockstep phase) it also writes, for each
 * capsule, the time from its stamp to its arrival here: the one-way
 * latency into the operator's process, read on receipt, before anything
 * else of the callback. */
#include <zflow/zflow.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct op {
    uint64_t *stamps;
    uint64_t n, next;
} op;

static zf_err op_init(zf_node *n, void **state)
{
    const zf_config *c = zf_node_config(n);
    const char *name = NULL;
    int64_t count = 0;
    op *o = calloc(1, sizeof *o);
    if (!o)
        return ZF_ENOMEM;
    *state = o;
    if (zf_config_string(c, "stamps", NULL, &name) != ZF_OK || !name)
        return ZF_OK; /* forwarding only */
    if (zf_config_int(c, "stamps_n", 0, &count) != ZF_OK || count <= 0) {
        zf_node_set_error(n, "bench_op: stamps needs stamps_n, a count > 0");
        goto fail;
    }
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        zf_node_set_error(n, "bench_op: shm_open %s failed", name);
        goto fail;
    }
    void *p =
        mmap(NULL, (size_t)count * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        zf_node_set_error(n, "bench_op: mapping %s failed", name);
        goto fail;
    }
    o->stamps = p;
    o->n = (uint64_t)count;
    return ZF_OK;
fail:
    free(o);
    *state = NULL;
    return ZF_EINVAL;
}

static void op_fini(void *state)
{
    op *o = state;
    if (o && o->stamps)
        munmap(o->stamps, o->n * sizeof(uint64_t));
    free(o);
}

static zf_err op_on_input(void *state, zf_node *n, unsigned port, zf_data **d)
{
    op *o = state;
    (void)port;
    if (o->stamps && o->next < o->n)
        o->stamps[o->next++] = zf_clock_ns() - zf_data_timestamp(*d);
    return zf_send(n, 0, d);
}

static const zf_port_decl inputs[] = {{"in", NULL}};
static const zf_port_decl outputs[] = {{"out", NULL}};
static const zf_node_decl decl = {.abi = ZF_ABI_VERSION,
                                  .kind = ZF_OPERATOR,
                                  .name = "bench_op",
                                  .inputs = inputs,
                                  .n_inputs = 1,
                                  .outputs = outputs,
                                  .n_outputs = 1,
                                  .init = op_init,
                                  .fini = op_fini,
                                  .on_input = op_on_input};
ZF_NODE_EXPORT(decl)
