/* Helpers for tests that run dataflows: descriptors with {{ NODES }} (the
 * test node libraries), {{ SEED }} (the seed pipeline's), {{ TMP }} (a
 * fresh temporary folder), statistics lookups and summary files. */
#ifndef ZT_TESTUTIL_H
#define ZT_TESTUTIL_H

#include <zflow/zflow.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Frame size for camera tests: 10 MiB (the figure) in a normal build;
 * smaller under sanitizers so the camera keeps its 60 frames per second. */
#if defined(ZF_SANITIZE_THREAD)
#define ZT_FRAME_BYTES (1u << 20)
#elif defined(ZF_SANITIZE_ADDRESS)
#define ZT_FRAME_BYTES (2u << 20)
#else
#define ZT_FRAME_BYTES (10u << 20)
#endif

/* Whether a process's RSS tells anything: not under the sanitizers, whose
 * shadow memory and allocators grow on their own (the normal build checks). */
#if defined(ZF_SANITIZE_THREAD) || defined(ZF_SANITIZE_ADDRESS)
#define ZT_RSS_MEANINGFUL 0
#else
#define ZT_RSS_MEANINGFUL 1
#endif

/* The build and source folders (ZF_BINARY_DIR / ZF_SOURCE_DIR). */
const char *zt_build_dir(void);
const char *zt_source_dir(void);
/* A temporary folder made for this process (removed at exit). */
const char *zt_tmp_dir(void);
/* "<tmp>/<name>": a path in the temporary folder (static buffer ring). */
const char *zt_tmp_path(const char *name);

/* Load a descriptor from text, with vars NODES, SEED, TMP set and `extra`
 * ("K=V" strings, NULL-terminated, may be NULL). diag may be NULL. */
zf_flow *zt_flow(const char *yaml, const char *const *extra, zf_diag *diag, zf_err *err);

/* Create and start an instance; NULL (and a message) on failure. */
zf_instance *zt_start(zf_runtime *rt, const zf_flow *f, zf_diag *diag);

/* zt_flow (with `extra`), then zt_start on rt: the instance, and the flow
 * in *fo; NULL (and *fo NULL), with the diagnostics printed, on failure. */
zf_instance *zt_launch(zf_runtime *rt, const char *yaml, const char *const *extra, zf_flow **fo);
/* Stop inst, destroy it, free f: the stop report. */
zf_stop_report zt_finish(zf_instance *inst, zf_flow *f);
/* Wait until node `id` has had `n` callbacks (true) or timeout_ms passes. */
bool zt_wait_callbacks(zf_instance *inst, const char *id, uint64_t n, int timeout_ms);
/* What zt_run_until saw. */
typedef struct zt_outcome {
    bool started;          /* the flow loaded and its instance started */
    bool reached;          /* node `id` had `n` callbacks in time */
    zf_node_stats node;    /* node `id`'s statistics then (id and reason NULL) */
    zf_stop_report report; /* zeroed if it did not start */
} zt_outcome;
/* zt_launch, wait until node `id` has had `n` callbacks (timeout_ms at most;
 * a message if in vain), take its statistics, zt_finish. */
zt_outcome zt_run_until(zf_runtime *rt, const char *yaml, const char *const *extra, const char *id,
                        uint64_t n, int timeout_ms);

/* printf into one of 8 static buffers used in turn (1 KiB each). */
const char *zt_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A node of zt_chain's flow: its id, the line naming its code (ZT_LIB("gen"),
 * or e.g. "python: \"{{ PY }}/sink.py\""), its configuration without the
 * braces (NULL: none) and the queue of the link out of it without the
 * braces (NULL: the default). */
typedef struct zt_node {
    const char *id;
    const char *code;
    const char *cfg;
    const char *queue;
} zt_node;
#define ZT_LIB(name) "library: \"{{ NODES }}/libt_" name ".so\""

/* The descriptor of the flow `name`: nodes[0], a source, -> nodes[1..n-2],
 * operators -> nodes[n-1], a sink; ports out and in, of type bytes when
 * `typed`. In a static buffer (the next call overwrites it). */
const char *zt_chain(const char *name, const zt_node *nodes, size_t n, bool typed);

/* The seed pipeline's cascade: camera -> detect -> motor, the camera fanned
 * out to recorder; frames of ZT_FRAME_BYTES at 60 per second. */
typedef struct zt_seed {
    const char *name;
    const char *top;          /* a top-level line (e.g. max_memory: N), may be "" */
    int reserve;              /* frames the camera pre-faults */
    const char *hang_timeout; /* detect's */
    const char *detect_cfg;   /* detect's configuration, without the braces */
    int capacity;             /* the camera's two links: capacity and policy */
    const char *policy;
} zt_seed;
/* Its descriptor, in a static buffer (the next call overwrites it). */
const char *zt_seed_flow(const zt_seed *s);

/* Statistics of node `id` / of the link into `to` ("node.port"); false if
 * not found. */
bool zt_node_stats(zf_instance *inst, const char *id, zf_node_stats *out, char *reason,
                   size_t reason_len);
bool zt_link_stats(zf_instance *inst, const char *to, zf_link_stats *out);
zf_pool_stats zt_pool_stats(zf_instance *inst);

/* Wait until node `id` is in `state` (true) or timeout_ms passes (false). */
bool zt_wait_state(zf_instance *inst, const char *id, zf_node_state state, int timeout_ms);

/* A number from a one-line JSON summary file ({"key":N,...}); -1 if absent. */
long long zt_summary(const char *path, const char *key);

/* Run a command (argv[0] found on PATH or absolute), capture stdout+stderr
 * into *out (malloc'd), return the exit status (or 128+signal). */
int zt_exec(char *const argv[], char **out, int timeout_s);

/* Read fd until end of file into buf (NUL-terminated, at most len-1 bytes);
 * returns the length. */
size_t zt_read_all(int fd, char *buf, size_t len);
/* A whole (small) file into buf, NUL-terminated; "" if unreadable. */
const char *zt_read_file(const char *path, char *buf, size_t len);

/* Resident set size of this process in bytes. */
uint64_t zt_rss(void);
/* Open file descriptors of process pid (0: this one). */
int zt_open_fds(int pid);
/* Threads of this process; -1 if unreadable. */
int zt_threads(void);

void zt_sleep_ms(int ms);

/* A daemon for a test: zfd started with argv (argv[0] its path; stderr
 * into log_path), its socket awaited, stopped (SIGTERM, then SIGKILL after
 * 30 s; *pid 0 after); zfctl ARGS... --socket sock (NULL-terminated), its
 * output in *out. */
#include <sys/types.h>
pid_t zt_zfd_spawn(char *const argv[], const char *log_path);
bool zt_zfd_wait_socket(const char *sock, int timeout_ms);
void zt_zfd_stop(pid_t *pid);
int zt_zfctl(char **out, const char *sock, const char *a0, ...);
/* Deploy `yaml` (written to a file) as `name` through zfctl: its UUID (a
 * static buffer), or NULL (the error printed). */
const char *zt_zfd_deploy(const char *sock, const char *name, const char *yaml);
/* The flow `name`: the test node chatty (a source logging at every level,
 * configuration `cfg` without braces) every `period` -> count; its link in
 * block style, last (a `record:` line may follow). In zt_fmt's buffers. */
const char *zt_chatty_flow(const char *name, const char *period, const char *cfg);

#endif
