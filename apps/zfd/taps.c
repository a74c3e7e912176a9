/* zfd's `echo` and `hz`: a tap on one output port for the length of a
 * request (docs/operations.md). echo answers the capsules that passed
 * (metadata and first bytes) once it has `count` of them or its wait is
 * over; hz measures the rate and the period's spread over its wait. The
 * tap never slows the link: what its queue cannot take is dropped and
 * counted in the answer. */
#include "zfd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *answer(zf_json_writer *w)
{
    char *result = zf_json_writer_finish(w);
    char *resp = result ? zf_response_ok(result) : zf_response_error(ZF_ENOMEM, "out of memory");
    free(result);
    return resp;
}

static char *tap_error(zf_err e, const char *link)
{
    return zf_response_error(e, "%s: %s", link, zf_last_error());
}

/* The next item before t0 + wait; false at the end of the wait or of the
 * stream (*ended). */
static bool next_before(zf_tap *t, uint64_t t0, int64_t wait, zf_tap_item *it, bool *ended)
{
    int64_t left = wait - (int64_t)(zf_clock_ns() - t0);
    zf_err e = left > 0 ? zf_tap_next(t, it, left) : ZF_ETIMEDOUT;
    *ended = e == ZF_ECLOSED;
    return e == ZF_OK;
}

char *zfd_echo(zf_instance *inst, const char *uuid, const zf_request *req)
{
    zf_tap *t = NULL;
    zf_err e = zf_tap_open(inst, req->link, NULL, &t);
    if (e != ZF_OK)
        return tap_error(e, req->link);
    int want = req->count ? req->count : 10;
    int64_t wait = (int64_t)(req->wait_ms ? req->wait_ms : 5000) * 1000000;
    uint64_t t0 = zf_clock_ns();
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_put_string(w, "uuid", uuid);
    zf_json_put_string(w, "link", req->link);
    zf_json_put_string(w, "type", zf_tap_type(t));
    zf_json_open_array(w, "items");
    bool ended = false;
    zf_tap_item it;
    for (int n = 0; n < want && next_before(t, t0, wait, &it, &ended);) {
        char hex[2 * sizeof it.head + 1];
        for (size_t k = 0; k < it.head_len; k++)
            snprintf(hex + 2 * k, 3, "%02x", it.head[k]);
        hex[2 * it.head_len] = '\0';
        zf_json_open_object(w, NULL);
        zf_json_put_uint(w, "seq", it.seq);
        zf_json_put_uint(w, "timestamp_ns", it.timestamp_ns);
        zf_json_put_uint(w, "len", it.len);
        zf_json_put_string(w, "head", hex);
        zf_json_close(w);
        n++;
    }
    zf_json_close(w);
    zf_json_put_uint(w, "dropped", zf_tap_dropped(t));
    zf_json_put_bool(w, "ended", ended);
    zf_json_close(w);
    zf_tap_close(t);
    return answer(w);
}

char *zfd_hz(zf_instance *inst, const char *uuid, const zf_request *req)
{
    zf_tap *t = NULL;
    zf_err e = zf_tap_open(inst, req->link, NULL, &t);
    if (e != ZF_OK)
        return tap_error(e, req->link);
    int64_t wait = (int64_t)(req->wait_ms ? req->wait_ms : 1000) * 1000000;
    uint64_t t0 = zf_clock_ns(), first = 0, last = 0, n = 0, bytes = 0;
    double sum = 0, sum2 = 0, lo = 0, hi = 0;
    bool ended = false;
    zf_tap_item it;
    while (next_before(t, t0, wait, &it, &ended)) {
        n++;
        bytes += it.len;
        if (n > 1 && it.timestamp_ns >= last) {
            double p = (double)(it.timestamp_ns - last) / 1e9;
            sum += p;
            sum2 += p * p;
            lo = n == 2 || p < lo ? p : lo;
            hi = n == 2 || p > hi ? p : hi;
        }
        if (n == 1)
            first = it.timestamp_ns;
        last = it.timestamp_ns;
    }
    double span = n > 1 ? (double)(last - first) / 1e9 : 0;
    double mean = n > 1 ? sum / (double)(n - 1) : 0;
    double var = n > 2 ? sum2 / (double)(n - 1) - mean * mean : 0;
    zf_json_writer *w = zf_json_writer_new();
    zf_json_open_object(w, NULL);
    zf_json_put_string(w, "uuid", uuid);
    zf_json_put_string(w, "link", req->link);
    zf_json_put_uint(w, "messages", n);
    zf_json_put_double(w, "window_s", (double)(zf_clock_ns() - t0) / 1e9);
    zf_json_put_double(w, "rate", span > 0 ? (double)(n - 1) / span : 0);
    zf_json_put_double(w, "bytes_per_s",
                       span > 0 ? (double)bytes * (double)(n - 1) / (double)n / span : 0);
    zf_json_put_double(w, "min_period_s", lo);
    zf_json_put_double(w, "max_period_s", hi);
    zf_json_put_double(w, "mean_period_s", mean);
    zf_json_put_double(w, "std_period_s", var > 0 ? sqrt(var) : 0);
    zf_json_put_uint(w, "dropped", zf_tap_dropped(t));
    zf_json_put_bool(w, "ended", ended);
    zf_json_close(w);
    zf_tap_close(t);
    return answer(w);
}
