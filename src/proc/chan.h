/* The control channel between the runtime and a node host: a Unix
 * SOCK_SEQPACKET socket pair (message boundaries kept), each message a
 * type, a payload and up to ZFI_MSG_MAX_FDS descriptors (SCM_RIGHTS).
 * Data never goes here: it crosses through the rings (shm.h). */
#ifndef ZFI_PROC_CHAN_H
#define ZFI_PROC_CHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZFI_MSG_MAX     (256u * 1024u)
#define ZFI_MSG_MAX_FDS 4u

typedef enum zfi_msg_type {
    /* runtime -> child */
    ZFI_MSG_SPEC = 1, /* the node (text, "key\tvalue" lines) + the ring memfd */
    ZFI_MSG_SEG,      /* a small-arena segment: u64 offset, u64 size + its memfd */
    ZFI_MSG_LARGE,    /* a large segment: u32 id, u64 size + its memfd */
    ZFI_MSG_INIT,     /* run init */
    ZFI_MSG_FINI,     /* run fini, then exit */
    /* child -> runtime */
    ZFI_MSG_DECL = 64,   /* kind and ports as loaded ("key\tvalue" lines) */
    ZFI_MSG_LOAD_FAILED, /* i32 error + message */
    ZFI_MSG_INIT_DONE,   /* i32 result + message */
    ZFI_MSG_FINI_DONE,
    ZFI_MSG_LOG,  /* i32 level + message */
    ZFI_MSG_ERROR /* i32 error, u8 0: on_input 1: produce, message */
} zfi_msg_type;

typedef struct zfi_msg {
    uint32_t type;
    size_t len;
    char *data; /* len bytes + a NUL (owned) */
    int fds[ZFI_MSG_MAX_FDS];
    size_t n_fds;
} zfi_msg;

/* Send one message; false (errno) on failure. */
bool zfi_msg_send(int sock, uint32_t type, const void *data, size_t len, const int *fds,
                  size_t n_fds);
/* Receive one message into m (free with zfi_msg_free). 1: a message, 0: none
 * waiting (nonblocking), or the peer closed or died (*closed set), -1: a
 * malformed message. */
int zfi_msg_recv(int sock, zfi_msg *m, bool block, bool *closed);
void zfi_msg_free(zfi_msg *m);

/* Wait until sock is readable or pidfd (may be -1) signals, at most
 * timeout_ns (< 0: no limit). 1: readable, 0: timeout, -1: the process
 * ended (pidfd) or an error. */
int zfi_chan_wait(int sock, int pidfd, int64_t timeout_ns);

#endif
