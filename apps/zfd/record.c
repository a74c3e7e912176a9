/* zfd's `record`: recordings of instances' outputs, written by the daemon
 * into STATE/recordings/FILE (a plain file name: the daemon writes only in
 * its own folder, never where a client points it, so whoever may use the
 * socket cannot make the daemon overwrite a file of its user). A recording
 * runs until `record` with start false, its size limit, or the instance's
 * destroy (after the drain: what reached the links is in it). */
#include "zfd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct recording {
    char uuid[37];
    char *path;
    zf_recorder *rec;
    struct recording *next;
} recording;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static recording *list;

static bool plain_name(const char *s)
{
    if (!s || !*s || s[0] == '.')
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '_' || *s == '-'))
            return false;
    return true;
}

static recording *take(const char *uuid)
{
    for (recording **p = &list; *p; p = &(*p)->next)
        if (!strcmp((*p)->uuid, uuid)) {
            recording *r = *p;
            *p = r->next;
            return r;
        }
    return NULL;
}

static char *stopped(recording *r)
{
    zf_recorder_stats st;
    zf_err e = zf_recorder_stop(r->rec, &st);
    char *resp;
    if (e != ZF_OK) {
        resp = zf_response_error(e, "%s", zf_last_error());
    } else {
        zf_json_writer *w = zf_json_writer_new();
        zf_json_open_object(w, NULL);
        zf_json_put_string(w, "uuid", r->uuid);
        zf_json_put_string(w, "path", r->path);
        zf_json_put_uint(w, "records", st.records);
        zf_json_put_uint(w, "bytes", st.bytes);
        zf_json_put_uint(w, "dropped", st.dropped);
        zf_json_put_bool(w, "limit_reached", st.limit_reached);
        zf_json_put_uint(w, "cpu_ns", st.cpu_ns);
        zf_json_put_uint(w, "elapsed_ns", st.elapsed_ns);
        zf_json_close(w);
        char *result = zf_json_writer_finish(w);
        resp = result ? zf_response_ok(result) : zf_response_error(ZF_ENOMEM, "out of memory");
        free(result);
    }
    free(r->path);
    free(r);
    return resp;
}

char *zfd_record(zfd_daemon *d, zf_instance *inst, const char *uuid, const zf_request *req)
{
    if (!req->start) {
        pthread_mutex_lock(&mu);
        recording *r = take(uuid);
        pthread_mutex_unlock(&mu);
        if (!r)
            return zf_response_error(ZF_ENOTFOUND, "instance %s is not being recorded", uuid);
        return stopped(r);
    }
    if (!d->state_dir)
        return zf_response_error(ZF_ENOTFOUND, "this daemon has no state folder for recordings");
    if (!plain_name(req->file))
        return zf_response_error(ZF_EINVAL,
                                 "file: give a plain file name ([A-Za-z0-9._-], not starting with "
                                 "'.'); the daemon writes recordings into %s/recordings/",
                                 d->state_dir);
    char dir[4096], path[4400];
    snprintf(dir, sizeof dir, "%s/recordings", d->state_dir);
    if (mkdir(dir, 0750) != 0 && errno != EEXIST)
        return zf_response_error(ZF_ESYS, "cannot create %s: %s", dir, strerror(errno));
    snprintf(path, sizeof path, "%s/%s", dir, req->file);
    pthread_mutex_lock(&mu);
    bool busy = false;
    for (recording *r = list; r && !busy; r = r->next)
        busy = !strcmp(r->uuid, uuid) || !strcmp(r->path, path);
    if (busy) {
        pthread_mutex_unlock(&mu);
        return zf_response_error(ZF_EBUSY, "instance %s or file %s is being recorded already", uuid,
                                 path);
    }
    char *links = req->link ? strdup(req->link) : NULL;
    const char *outs[256];
    size_t n = 0;
    for (char *tok = links ? strtok(links, ",") : NULL; tok && n < 256; tok = strtok(NULL, ","))
        outs[n++] = tok;
    zf_recorder_options o = {
        .outputs = n ? outs : NULL, .n_outputs = n, .max_bytes = req->max_bytes};
    recording *r = calloc(1, sizeof *r);
    zf_err e = r ? zf_recorder_start(inst, path, &o, &r->rec) : ZF_ENOMEM;
    free(links);
    if (e != ZF_OK) {
        pthread_mutex_unlock(&mu);
        free(r);
        return zf_response_error(e, "%s", e == ZF_ENOMEM ? "out of memory" : zf_last_error());
    }
    snprintf(r->uuid, sizeof r->uuid, "%s", uuid);
    r->path = strdup(path);
    r->next = list;
    list = r;
    pthread_mutex_unlock(&mu);
    char buf[4600];
    snprintf(buf, sizeof buf, "{\"uuid\":\"%s\",\"path\":\"%s\",\"recording\":true}", uuid, path);
    return zf_response_ok(buf);
}

void zfd_record_end(const char *uuid)
{
    pthread_mutex_lock(&mu);
    recording *r = take(uuid);
    pthread_mutex_unlock(&mu);
    if (r)
        free(stopped(r));
}
