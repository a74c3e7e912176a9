/* Frames on a stream socket: a 4-byte big-endian length, then that many
 * bytes (a JSON text). */
#ifndef ZFI_FRAME_H
#define ZFI_FRAME_H

#include "core/common.h"

/* Write one frame within timeout_ms (<0: no limit). ZF_OK, ZF_ETIMEDOUT,
 * ZF_ECLOSED (peer gone), ZF_ESYS. */
zf_err zfi_frame_write(int fd, const char *data, size_t len, int timeout_ms);

/* Read one frame. Waits up to idle_ms (<0: forever) for its first byte,
 * then up to rest_ms for the rest. *out is NUL-terminated; caller frees.
 * ZF_OK; ZF_ECLOSED: the peer closed between frames; ZF_ETIMEDOUT: no frame
 * began within idle_ms; ZF_EPROTO: truncated (closed or stalled mid-frame);
 * ZF_EINVAL: longer than max (the stream cannot be resynchronized); ZF_ESYS. */
zf_err zfi_frame_read(int fd, char **out, size_t *len, size_t max, int idle_ms, int rest_ms);

#endif
