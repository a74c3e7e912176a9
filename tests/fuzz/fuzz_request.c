/* libFuzzer target over the control protocol's decoders: the bytes are a
 * stream a client could send (frames: length + JSON request), read with the
 * daemon's frame reader from a socket pair, then decoded as requests; the
 * raw bytes also go straight to the request decoder. Nothing may crash,
 * leak or hang. */
#include "control/frame.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void decode(const char *text, size_t len)
{
    zf_request *r = NULL;
    if (zf_request_decode(text, len, &r) == ZF_OK) {
        char *again = zf_request_encode(r); /* what decodes must encode */
        if (!again)
            abort();
        zf_request *r2 = NULL;
        if (zf_request_decode(again, strlen(again), &r2) != ZF_OK)
            abort();
        zf_request_free(r2);
        free(again);
    }
    zf_request_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    decode((const char *)data, size);
    if (size > 60000)
        return 0;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return 0;
    ssize_t w = write(sv[0], data, size);
    (void)w;
    shutdown(sv[0], SHUT_WR);
    for (int i = 0; i < 16; i++) {
        char *frame = NULL;
        size_t len = 0;
        zf_err e = zfi_frame_read(sv[1], &frame, &len, 65536, 0, 0);
        if (e != ZF_OK)
            break;
        decode(frame, len);
        free(frame);
    }
    close(sv[0]);
    close(sv[1]);
    return 0;
}
