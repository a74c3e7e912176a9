/* crash: a test operator for process isolation, forwarding its input.
 *   crash_every: 0   die on every capsule whose sequence number is a multiple
 *                    of N (a poison message)
 *   how: segv        segv (a NULL write) | abort | exit (status 3) |
 *                    garbage (scribble over this process's rings, then go on) |
 *                    write (write into the capsule received, read-only here) |
 *                    fork (the first time: fork a process that waits forever,
 *                    its pid written to pid_file, then go on) |
 *                    close_fds (the first time: close every descriptor from 3
 *                    up, the runtime's control socket among them, then go on)
 *   hold: 0          keep references to the last N capsules, each sent on while
 *                    still held (the sender keeps a reference)
 *   sleep_us: 0      busy time per capsule
 * Its process dies; the runtime reclaims, restarts or fails it. */
#include <zflow/zflow.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef struct crash {
    int64_t every, hold, sleep_us;
    char how[16];
    char pid_file[256];
    bool forked;
    zf_data **held;
    int64_t next;
} crash;

static zf_err crash_init(zf_node *n, void **state)
{
    crash *c = calloc(1, sizeof *c);
    if (!c)
        return ZF_ENOMEM;
    const zf_config *cfg = zf_node_config(n);
    const char *how = "segv", *pid_file = "";
    if (zf_config_int(cfg, "crash_every", 0, &c->every) != ZF_OK ||
        zf_config_int(cfg, "hold", 0, &c->hold) != ZF_OK ||
        zf_config_int(cfg, "sleep_us", 0, &c->sleep_us) != ZF_OK ||
        zf_config_string(cfg, "how", "segv", &how) != ZF_OK ||
        zf_config_string(cfg, "pid_file", "", &pid_file) != ZF_OK) {
        zf_node_set_error(n, "%s", zf_last_error());
        free(c);
        return ZF_ETYPE;
    }
    snprintf(c->how, sizeof c->how, "%s", how);
    snprintf(c->pid_file, sizeof c->pid_file, "%s", pid_file);
    c->held = calloc((size_t)c->hold + 1, sizeof *c->held);
    *state = c;
    return ZF_OK;
}

/* Write 0xab over every mapping of this process's rings (what a node with
 * a wild pointer might do). */
static void scribble(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (strstr(line, "zflow-node-rings") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
            memset((void *)lo, 0xab, hi - lo);
    }
    if (f)
        fclose(f);
}

static void die_now(crash *c, zf_data *d)
{
    if (!strcmp(c->how, "fork")) {
        if (c->forked)
            return;
        c->forked = true;
        pid_t p = fork();
        if (p == 0)
            for (;;)
                pause();
        FILE *f = p > 0 && c->pid_file[0] ? fopen(c->pid_file, "w") : NULL;
        if (f) {
            fprintf(f, "%d\n", (int)p);
            fclose(f);
        }
        return;
    }
    if (!strcmp(c->how, "close_fds")) {
        if (c->forked)
            return;
        c->forked = true; /* (once, as fork) */
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        return;
    }
    if (!strcmp(c->how, "abort"))
        abort();
    if (!strcmp(c->how, "exit"))
        _exit(3);
    if (!strcmp(c->how, "garbage")) {
        scribble();
        return;
    }
    if (!strcmp(c->how, "write")) {
        memset((void *)zf_data_ptr(d), 0, zf_data_len(d)); /* read-only: faults */
        return;
    }
    *(volatile int *)(uintptr_t)zf_data_len(d) = 1; /* not an address: SIGSEGV */
    raise(SIGSEGV);
}

static zf_err crash_on_input(void *state, zf_node *n, unsigned port, zf_data **d)
{
    crash *c = state;
    (void)port;
    if (c->sleep_us) {
        struct timespec ts = {0, c->sleep_us * 1000};
        nanosleep(&ts, NULL);
    }
    if (c->every && zf_data_seq(*d) % (uint64_t)c->every == 0)
        die_now(c, *d);
    if (c->hold) {
        int64_t i = c->next++ % c->hold;
        zf_data_unref(c->held[i]);
        c->held[i] = zf_data_ref(*d); /* kept; the send below moves the other one */
    }
    return zf_send(n, 0, d);
}

static void crash_fini(void *state)
{
    crash *c = state;
    for (int64_t i = 0; i < c->hold; i++)
        zf_data_unref(c->held[i]);
    free(c->held);
    free(c);
}

static const zf_port_decl ins[] = {{"in", "any"}};
static const zf_port_decl outs[] = {{"out", "any"}};

static const zf_node_decl crash_decl = {
    .abi = ZF_ABI_VERSION,
    .kind = ZF_OPERATOR,
    .name = "crash",
    .inputs = ins,
    .n_inputs = 1,
    .outputs = outs,
    .n_outputs = 1,
    .init = crash_init,
    .fini = crash_fini,
    .on_input = crash_on_input,
};

ZF_NODE_EXPORT(crash_decl)
