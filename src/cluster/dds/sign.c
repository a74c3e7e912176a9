/* Signed control: an HMAC-SHA-512/256 (libsodium's crypto_auth) with the
 * cluster key over every field of a control message but the signature. */
#include "cluster/dds/impl.h"

#include <ctype.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

_Static_assert(crypto_auth_KEYBYTES == 32, "the cluster key is 32 bytes");

static int hexval(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

zf_err zfi_key_load(const char *path, zfi_key *out)
{
    memset(out, 0, sizeof *out);
    if (sodium_init() < 0)
        return zfi_error(ZF_ESYS, "libsodium could not be initialized");
    FILE *f = fopen(path, "rb");
    if (!f)
        return zfi_error(ZF_EINVAL, "cluster key %s: %s", path, strerror(errno));
    unsigned char buf[200];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    size_t a = 0, b = n;
    while (a < b && isspace(buf[a]))
        a++;
    while (b > a && isspace(buf[b - 1]))
        b--;
    if (n == 32) {
        memcpy(out->k, buf, 32);
    } else if (b - a == 64) {
        for (size_t i = 0; i < 32; i++) {
            int hi = hexval(buf[a + 2 * i]), lo = hexval(buf[a + 2 * i + 1]);
            if (hi < 0 || lo < 0)
                return zfi_error(ZF_EINVAL, "cluster key %s: not 64 hexadecimal digits", path);
            out->k[i] = (unsigned char)(hi << 4 | lo);
        }
    } else {
        sodium_memzero(buf, sizeof buf);
        return zfi_error(ZF_EINVAL,
                         "cluster key %s: expected 32 bytes or 64 hexadecimal digits, found %zu "
                         "bytes (make one with: head -c32 /dev/urandom | xxd -p -c64 > %s)",
                         path, n, path);
    }
    sodium_memzero(buf, sizeof buf);
    out->set = true;
    return ZF_OK;
}

static void mac(const zfi_key *k, const zfi_msg_ctl *m, unsigned char out[crypto_auth_BYTES])
{
    crypto_auth_hmacsha512256_state st;
    crypto_auth_hmacsha512256_init(&st, k->k, sizeof k->k);
    const char *strs[] = {m->to, m->from, m->body};
    uint64_t nums[] = {m->id, m->kind, m->time};
    for (size_t i = 0; i < 3; i++) {
        uint64_t len = strlen(strs[i]);
        crypto_auth_hmacsha512256_update(&st, (const unsigned char *)&len, sizeof len);
        crypto_auth_hmacsha512256_update(&st, (const unsigned char *)strs[i], len);
    }
    crypto_auth_hmacsha512256_update(&st, (const unsigned char *)nums, sizeof nums);
    crypto_auth_hmacsha512256_final(&st, out);
}

void zfi_ctl_sign(const zfi_key *k, const zfi_msg_ctl *m, char sig[65])
{
    unsigned char t[crypto_auth_BYTES];
    mac(k, m, t);
    sodium_bin2hex(sig, 65, t, sizeof t);
}

bool zfi_ctl_verify(const zfi_key *k, const zfi_msg_ctl *m)
{
    unsigned char t[crypto_auth_BYTES], got[crypto_auth_BYTES];
    size_t n = 0;
    if (!m->sig || strlen(m->sig) != 64 ||
        sodium_hex2bin(got, sizeof got, m->sig, 64, NULL, &n, NULL) != 0 || n != sizeof got)
        return false;
    mac(k, m, t);
    return sodium_memcmp(t, got, sizeof t) == 0;
}
