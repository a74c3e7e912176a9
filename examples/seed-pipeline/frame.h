/* The seed pipeline's message formats, shared by its nodes. */
#ifndef SEED_FRAME_H
#define SEED_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_MAGIC 0x7a66667261656d31ull /* "zfframe1" */

/* At the start of every frame; the pixels follow. */
typedef struct frame_header {
    uint64_t magic;
    uint64_t seq;      /* frame number, from 1 */
    uint64_t checksum; /* of the pixel bytes after this header */
    uint64_t bytes;    /* pixel bytes */
} frame_header;

/* What detect sends to motor for each frame. */
typedef struct detection {
    uint64_t frame_seq;
    uint64_t frame_checksum;
    uint64_t frame_timestamp_ns;
    uint32_t objects;
    uint32_t brightness;
} detection;

/* Pixel word i of frame seq: cheap, and different for every frame. */
static inline uint64_t frame_word(uint64_t seq, size_t i)
{
    return (seq << 40) ^ ((uint64_t)i * 0x9e3779b97f4a7c15ull);
}

/* Checksum of the pixels: four independent lanes, then mixed. */
static inline uint64_t frame_checksum(const void *pixels, size_t bytes)
{
    const uint64_t *w = (const uint64_t *)pixels; /* (a cast: C++ includes this too) */
    size_t n = bytes / 8;
    uint64_t a = 1, b = 2, c = 3, d = 4;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        a = (a ^ w[i]) * 0x100000001b3ull;
        b = (b ^ w[i + 1]) * 0x100000001b3ull;
        c = (c ^ w[i + 2]) * 0x100000001b3ull;
        d = (d ^ w[i + 3]) * 0x100000001b3ull;
    }
    for (; i < n; i++)
        a = (a ^ w[i]) * 0x100000001b3ull;
    const unsigned char *tail = (const unsigned char *)pixels + n * 8;
    for (size_t k = 0; k < bytes % 8; k++)
        b = (b ^ tail[k]) * 0x100000001b3ull;
    return a ^ (b << 1) ^ (c << 2) ^ (d << 3);
}

#endif
