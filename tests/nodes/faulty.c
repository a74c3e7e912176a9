/* faulty: a test sink that attacks the process hosting it.
 *   mode: none          one of:
 *     init_hang         init never returns
 *     init_sleep        init sleeps sleep_ms, then succeeds
 *     fini_hang         fini never returns
 *     exit0             the first on_input calls exit(0)
 *     segv              the first on_input writes to an unmapped address
 *     abort             the first on_input calls abort()
 *     fork              init forks a child that sleeps child_s seconds
 *                       (without exec: it inherits every descriptor)
 *     spin              the first on_input spins forever (a core burnt)
 *     stall             the first on_input sleeps sleep_ms, then returns
 *     bad_port          every on_input sends its capsule to output port 3
 *                       (a sink has none) and returns what zf_send said
 *   sleep_ms: 0, child_s: 30, pidfile: ""  (fork: the child's pid is written there) */
#include <zflow/zflow.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct faulty {
    char mode[32];
    int64_t sleep_ms, child_s;
} faulty;

static void sleep_forever(void)
{
    for (;;)
        sleep(3600);
}

static zf_err faulty_init(zf_node *n, void **state)
{
    faulty *f = calloc(1, sizeof *f);
    if (!f)
        return ZF_ENOMEM;
    const zf_config *c = zf_node_config(n);
    const char *mode = "none", *pidfile = NULL;
    if (zf_config_string(c, "mode", "none", &mode) != ZF_OK ||
        zf_config_int(c, "sleep_ms", 0, &f->sleep_ms) != ZF_OK ||
        zf_config_int(c, "child_s", 30, &f->child_s) != ZF_OK ||
        zf_config_string(c, "pidfile", NULL, &pidfile) != ZF_OK) {
        zf_node_set_error(n, "%s",
                          zf_last_error()); /* "configuration 'KEY' is ..., expected ..." */
        free(f);
        return ZF_ETYPE;
    }
    strncpy(f->mode, mode ? mode : "none", sizeof f->mode - 1);
    *state = f;
    if (!strcmp(f->mode, "init_hang"))
        sleep_forever();
    if (!strcmp(f->mode, "init_sleep")) {
        struct timespec ts = {f->sleep_ms / 1000, (f->sleep_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
    if (!strcmp(f->mode, "fork")) {
        pid_t pid = fork();
        if (pid == 0) {
            sleep((unsigned)f->child_s);
            _exit(0);
        }
        FILE *p = pidfile ? fopen(pidfile, "w") : NULL;
        if (p) {
            fprintf(p, "%d\n", (int)pid);
            fclose(p);
        }
    }
    return ZF_OK;
}

/* Not NULL (UBSan would report a null store first): an unmapped page. */
static volatile int *volatile nowhere = (volatile int *)(uintptr_t)64;

static zf_err faulty_on_input(void *state, zf_node *n, unsigned port, zf_data **d)
{
    faulty *f = state;
    (void)port;
    if (!strcmp(f->mode, "exit0"))
        exit(0);
    if (!strcmp(f->mode, "segv"))
        *nowhere = 1;
    if (!strcmp(f->mode, "abort"))
        abort();
    if (!strcmp(f->mode, "bad_port"))
        return zf_send(n, 3, d);
    if (!strcmp(f->mode, "stall") && f->sleep_ms > 0) {
        struct timespec ts = {f->sleep_ms / 1000, (f->sleep_ms % 1000) * 1000000};
        f->sleep_ms = 0; /* once */
        nanosleep(&ts, NULL);
    }
    if (!strcmp(f->mode, "spin"))
        for (volatile unsigned long i = 0;; i++)
            ;
    return ZF_OK;
}

static void faulty_fini(void *state)
{
    faulty *f = state;
    if (!strcmp(f->mode, "fini_hang"))
        sleep_forever();
    free(f);
}

static const zf_port_decl inputs[] = {{"in", "any"}};

static const zf_node_decl decl = {
    .abi = ZF_ABI_VERSION,
    .kind = ZF_SINK,
    .name = "faulty",
    .inputs = inputs,
    .n_inputs = 1,
    .init = faulty_init,
    .fini = faulty_fini,
    .on_input = faulty_on_input,
};

ZF_NODE_EXPORT(decl)
