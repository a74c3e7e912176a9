/* Record and replay: the seed pipeline's camera link recorded for 2 s,
 * replayed into detect -> motor (and the recorder sink, which checks every
 * pixel): the frames match frame by frame, the pace is the recorded one
 * within 5 %; truncated and foreign files are refused with their name and
 * the offset. */
#include "harness.h"
#include "testutil.h"

#include "../../examples/seed-pipeline/frame.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define FRAME (256u << 10)

static const char *seed(const char *name, bool recorder)
{
    return zt_fmt("name: %s\n"
                  "max_memory: 1GiB\n"
                  "sources:\n"
                  "  - id: camera\n"
                  "    library: \"{{ SEED }}/libzf_camera.so\"\n"
                  "    period: 16.667ms\n"
                  "    configuration: {frame_bytes: %u}\n"
                  "    outputs: [{id: frame, type: image/raw}]\n"
                  "operators:\n"
                  "  - id: detect\n"
                  "    library: \"{{ SEED }}/libzf_detect.so\"\n"
                  "    inputs: [{id: frame, type: image/raw}]\n"
                  "    outputs: [{id: detection, type: detection}]\n"
                  "sinks:\n"
                  "  - id: motor\n"
                  "    library: \"{{ SEED }}/libzf_motor.so\"\n"
                  "    inputs: [{id: detection, type: detection}]\n"
                  "%s"
                  "links:\n"
                  "  - {from: {node: camera, output: frame}, to: {node: detect, input: frame}}\n"
                  "  - {from: {node: detect, output: detection}, to: {node: motor, input: "
                  "detection}}\n"
                  "%s",
                  name, FRAME,
                  recorder ? "  - id: recorder\n"
                             "    library: \"{{ SEED }}/libzf_recorder.so\"\n"
                             "    configuration: {summary: \"{{ TMP }}/recorder.json\"}\n"
                             "    inputs: [{id: frame, type: image/raw}]\n"
                           : "",
                  recorder ? "  - {from: {node: camera, output: frame}, to: {node: recorder, "
                             "input: frame}}\n"
                           : "");
}

typedef struct frame_ref {
    uint64_t seq, checksum, ts;
} frame_ref;

ZT_CASE(camera_recorded_2s_replays_frame_by_frame_at_its_pace)
{
    zf_runtime *rt = NULL;
    ZT_EQ(zf_runtime_create(&(zf_runtime_options){.workers = 2}, &rt), ZF_OK);
    const char *path = zt_tmp_path("camera.zfrec");

    /* record */
    zf_flow *f = NULL;
    zf_instance *inst = zt_launch(rt, seed("seed-record", false), NULL, &f);
    ZT_CHECK(inst);
    const char *outs[] = {"camera.frame"};
    zf_recorder *rec = NULL;
    ZT_EQ(zf_recorder_start(inst, path, &(zf_recorder_options){.outputs = outs, .n_outputs = 1},
                            &rec),
          ZF_OK);
    zt_sleep_ms(2000);
    zf_stop_report rep;
    ZT_EQ(zf_instance_stop(inst, &rep), ZF_OK); /* the drain is recorded too */
    zf_recorder_stats rs;
    ZT_EQ(zf_recorder_stop(rec, &rs), ZF_OK); /* before the instance is destroyed */
    ZT_EQ(rep.bytes_leaked, 0);
    zf_instance_destroy(inst);
    zf_flow_free(f);
    fprintf(stderr, "  recorded %llu frames, %llu bytes, %llu dropped\n",
            (unsigned long long)rs.records, (unsigned long long)rs.bytes,
            (unsigned long long)rs.dropped);
    ZT_EQ(rs.dropped, 0);
    /* 120 at 60 fps; a loaded machine makes the camera skip periods */
    ZT_CHECK(rs.records >= 60 && rs.records <= 130);
    ZT_CHECK(rs.cpu_ns > 0 && rs.elapsed_ns >= 2000000000u); /* the writer's own cost, measured */

    /* the file: its size is what was written, and no space allocated ahead
     * of the writes stays past its end */
    struct stat fst;
    ZT_EQ(stat(path, &fst), 0);
    ZT_EQ((uint64_t)fst.st_size, rs.bytes);
    ZT_CHECK((uint64_t)fst.st_blocks * 512u <= rs.bytes + (1u << 20));

    /* every frame whole (its pixels match its checksum) */
    zf_recording *r = NULL;
    ZT_EQ(zf_recording_open(path, &r), ZF_OK);
    ZT_CHECK(!strcmp(zf_recording_flow(r), "seed-record"));
    ZT_EQ(zf_recording_link_count(r), 1);
    ZT_CHECK(!strcmp(zf_recording_link_get(r, 0)->output, "camera.frame"));
    ZT_CHECK(!strcmp(zf_recording_link_get(r, 0)->type, "image/raw"));
    size_t n = (size_t)zf_recording_count(r);
    ZT_EQ(n, rs.records);
    frame_ref *want = calloc(n, sizeof *want);
    char *buf = malloc(FRAME);
    ZT_CHECK(want && buf);
    zf_record one;
    for (size_t i = 0; i < n; i++) {
        ZT_EQ(zf_recording_next(r, &one), ZF_OK);
        ZT_EQ(one.len, FRAME);
        ZT_EQ(zf_recording_read(r, &one, buf), ZF_OK);
        const frame_header *h = (const frame_header *)buf;
        ZT_EQ(h->magic, FRAME_MAGIC);
        ZT_EQ(frame_checksum(h + 1, h->bytes), h->checksum);
        want[i] = (frame_ref){h->seq, h->checksum, one.timestamp_ns};
    }
    ZT_EQ(zf_recording_next(r, &one), ZF_ECLOSED);
    double rec_span = (double)zf_recording_duration_ns(r) / 1e9;

    /* replay into detect -> motor (and the recorder, which checks pixels);
     * the detections are read through a tap */
    zf_diag *dg = zf_diag_new();
    zf_flow *f2 = zt_flow(seed("seed-replay", true), NULL, dg, NULL);
    ZT_CHECK(f2);
    zf_instance *ri = NULL;
    ZT_EQ(zf_instance_create(rt, f2, &(zf_instance_options){.replay = r}, dg, &ri), ZF_OK);
    zf_tap *t = NULL;
    ZT_EQ(zf_tap_open(ri, "detect.detection", &(zf_tap_options){.capacity = 1024}, &t), ZF_OK);
    ZT_EQ(zf_instance_start(ri), ZF_OK);
    ZT_CHECK(zf_recording_wait(r, 30000000000LL));
    frame_ref *got = calloc(n, sizeof *got);
    size_t k = 0;
    zf_tap_item it;
    while (k < n && zf_tap_next(t, &it, 5000000000LL) == ZF_OK) {
        detection det;
        memcpy(&det, it.head, sizeof det);
        got[k++] = (frame_ref){det.frame_seq, det.frame_checksum, det.frame_timestamp_ns};
    }
    ZT_EQ(zf_tap_dropped(t), 0);
    zf_tap_close(t);
    zf_stop_report rr;
    ZT_EQ(zf_instance_stop(ri, &rr), ZF_OK);
    ZT_EQ(rr.bytes_leaked, 0);
    zf_instance_destroy(ri);
    ZT_EQ(k, n);
    for (size_t i = 0; i < n; i++) {
        if (got[i].seq != want[i].seq || got[i].checksum != want[i].checksum)
            ZT_FAIL("frame %zu: replayed seq %llu checksum %llx, recorded seq %llu checksum %llx",
                    i, (unsigned long long)got[i].seq, (unsigned long long)got[i].checksum,
                    (unsigned long long)want[i].seq, (unsigned long long)want[i].checksum);
    }
    double play_span = (double)(got[n - 1].ts - got[0].ts) / 1e9;
    fprintf(stderr, "  %zu frames match; recorded over %.3f s, replayed over %.3f s (%.2f %%)\n", n,
            rec_span, play_span, 100.0 * (play_span - rec_span) / rec_span);
    ZT_CHECK(play_span >= rec_span * 0.95 && play_span <= rec_span * 1.05);
    ZT_EQ(zt_summary(zt_tmp_path("recorder.json"), "frames"), (long long)n);
    ZT_EQ(zt_summary(zt_tmp_path("recorder.json"), "bad"), 0);
    uint64_t sent = 0;
    zf_recording_replayed(r, &sent, NULL);
    ZT_EQ(sent, n);

    /* as fast as possible: the same frames, much sooner */
    zf_recording *fast = NULL;
    ZT_EQ(zf_recording_open(path, &fast), ZF_OK);
    ZT_EQ(zf_recording_set_speed(fast, 1, true), ZF_OK);
    ZT_EQ(zf_recording_set_speed(fast, 0, false), ZF_EINVAL);
    uint64_t t0 = zf_clock_ns();
    ZT_EQ(zf_instance_create(rt, f2, &(zf_instance_options){.replay = fast}, dg, &ri), ZF_OK);
    ZT_EQ(zf_instance_start(ri), ZF_OK);
    ZT_CHECK(zf_recording_wait(fast, 30000000000LL));
    double fast_s = (double)(zf_clock_ns() - t0) / 1e9;
    ZT_EQ(zf_instance_stop(ri, &rr), ZF_OK);
    zf_instance_destroy(ri);
    fprintf(stderr, "  as fast as possible: %.3f s\n", fast_s);
    ZT_CHECK(fast_s < rec_span * 0.8);
    ZT_EQ(zt_summary(zt_tmp_path("recorder.json"), "frames"), (long long)n);
    ZT_EQ(zt_summary(zt_tmp_path("recorder.json"), "bad"), 0);
    zf_recording_close(fast);

    /* a recording of outputs the flow does not have is refused */
    zf_flow *other = zt_flow(zt_chain("other",
                                      (const zt_node[]){{"src", ZT_LIB("gen"), NULL, NULL},
                                                        {"sink", ZT_LIB("count"), NULL, NULL}},
                                      2, false),
                             NULL, NULL, NULL);
    ZT_CHECK(other);
    zf_diag *d2 = zf_diag_new();
    ZT_EQ(zf_instance_create(rt, other, &(zf_instance_options){.replay = r}, d2, &ri),
          ZF_ENOTFOUND);
    char *msg = zf_diag_format(d2);
    ZT_CHECK(msg && strstr(msg, "records output 'camera.frame', which flow 'other' does not have"));
    free(msg);
    zf_diag_free(d2);
    zf_flow_free(other);
    zf_recording_close(r);

    /* truncated (inside a payload, at a record boundary) and foreign */
    FILE *in = fopen(path, "rb");
    ZT_CHECK(in);
    const char *cut = zt_tmp_path("cut.zfrec");
    FILE *o = fopen(cut, "wb");
    size_t left = 1000000, got_b;
    while (left && (got_b = fread(buf, 1, left < FRAME ? left : FRAME, in)) > 0) {
        fwrite(buf, 1, got_b, o);
        left -= got_b;
    }
    fclose(o);
    fclose(in);
    ZT_EQ(zf_recording_open(cut, &r), ZF_EPARSE);
    fprintf(stderr, "  %s\n", zf_last_error());
    ZT_CHECK(strstr(zf_last_error(), cut) && strstr(zf_last_error(), ": offset ") &&
             strstr(zf_last_error(), "truncated"));
    ZT_EQ(truncate(path, (off_t)(rs.bytes - 32)), 0); /* its end record gone */
    ZT_EQ(zf_recording_open(path, &r), ZF_EPARSE);
    ZT_CHECK(strstr(zf_last_error(), zt_fmt("offset %llu", (unsigned long long)(rs.bytes - 32))) &&
             strstr(zf_last_error(), "without its end record"));
    const char *foreign = zt_tmp_path("foreign.zfrec");
    o = fopen(foreign, "w");
    fputs("name: not a recording\n", o);
    fclose(o);
    ZT_EQ(zf_recording_open(foreign, &r), ZF_EPARSE);
    ZT_CHECK(strstr(zf_last_error(), foreign) && strstr(zf_last_error(), "offset 0") &&
             strstr(zf_last_error(), "not a zflow recording"));
    /* zfctl replay says the same and exits 3 */
    char *argv[] = {(char *)zt_fmt("%s/apps/zfctl/zfctl", zt_build_dir()), "replay", (char *)cut,
                    (char *)zt_fmt("%s/examples/seed-pipeline/flow.yaml", zt_source_dir()), NULL};
    char *out = NULL;
    ZT_EQ(zt_exec(argv, &out, 60), 3);
    ZT_CHECK(out && strstr(out, cut) && strstr(out, "offset"));
    free(out);

    free(want);
    free(got);
    free(buf);
    zf_diag_free(dg);
    zf_flow_free(f2);
    zf_runtime_destroy(rt);
}

/* `record: FILE` on a link: zfctl run records it into FILE (relative to
 * the descriptor's folder) for the instance's life; the file is whole and
 * the stop report counts nothing leaked. */
ZT_CASE(record_on_a_link_in_the_descriptor)
{
    const char *yaml = zt_fmt("name: declared\n"
                              "sources:\n"
                              "  - id: src\n"
                              "    library: \"%s/tests/nodes/libt_gen.so\"\n"
                              "    period: 10ms\n"
                              "    outputs: [out]\n"
                              "sinks:\n"
                              "  - id: sink\n"
                              "    library: \"%s/tests/nodes/libt_count.so\"\n"
                              "    inputs: [in]\n"
                              "links:\n"
                              "  - from: {node: src, output: out}\n"
                              "    to: {node: sink, input: in}\n"
                              "    record: declared.zfrec\n",
                              zt_build_dir(), zt_build_dir());
    const char *path = zt_tmp_path("declared.yaml");
    FILE *f = fopen(path, "w");
    ZT_CHECK(f);
    fputs(yaml, f);
    fclose(f);
    char *argv[] = {(char *)zt_fmt("%s/apps/zfctl/zfctl", zt_build_dir()),
                    "run",
                    (char *)path,
                    "--duration",
                    "1s",
                    NULL};
    char *out = NULL;
    ZT_EQ(zt_exec(argv, &out, 60), 0);
    ZT_CHECK(strstr(out, "nothing leaked"));
    free(out);
    zf_recording *r = NULL;
    ZT_EQ(zf_recording_open(zt_tmp_path("declared.zfrec"), &r), ZF_OK);
    fprintf(stderr, "  record: on the link wrote %llu capsules\n",
            (unsigned long long)zf_recording_count(r));
    ZT_CHECK(zf_recording_count(r) >= 50 && zf_recording_count(r) <= 110);
    ZT_CHECK(!strcmp(zf_recording_link_get(r, 0)->output, "src.out"));
    zf_recording_close(r);
    /* not a string: refused where it is written */
    f = fopen(path, "w");
    fputs(zt_fmt("%.*s    record: [1, 2]\n", (int)(strstr(yaml, "    record:") - yaml), yaml), f);
    fclose(f);
    ZT_EQ(zt_exec(argv, &out, 60), 3);
    ZT_CHECK(strstr(out, "links[0].record") && strstr(out, "expected the file"));
    free(out);
}

ZT_MAIN(ZT_ENTRY(camera_recorded_2s_replays_frame_by_frame_at_its_pace),
        ZT_ENTRY(record_on_a_link_in_the_descriptor))
