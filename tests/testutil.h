/* Helpers for tests that run dataflows: descriptors with {{ NODES }} (the
 * test node libraries), {{ SEED }} (the seed pipeline's), {{ TMP }} (a
 * fresh temporary folder), statistics lookups and summary files. */
#ifndef ZT_TESTUTIL_H
#define ZT_TESTUTIL_H

#include <zflow/zflow.h>

#include <stdbool.h>
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

void zt_sleep_ms(int ms);

#endif
