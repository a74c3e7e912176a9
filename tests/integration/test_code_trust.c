/* Where node code may come from (zf_instance_options.code_dirs), attacked:
 * a python: symlink whose folder holds a planted module, a symlink flipped
 * between an allowed and a foreign script during 300 deploys, libraries in
 * a world-writable folder or writable by everyone, and a FIFO named as a
 * library (which must not block). */
#include "harness.h"
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static zf_runtime *rt;

static bool have_python(void)
{
    char host[1024];
    const char *env = getenv("ZF_PYTHON_HOST");
    snprintf(host, sizeof host, "%s/libzflow-python.so", zt_build_dir());
    if ((env && *env && access(env, R_OK) == 0) || access(host, R_OK) == 0)
        return true;
    printf("  skip: %s not built (needs python3-dev)\n", host);
    return false;
}

static void runtime(void)
{
    if (!rt)
        ZT_OK(zf_runtime_create(NULL, &rt));
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    chmod(path, mode);
}

static const char *mkdir_tmp(const char *name, mode_t mode)
{
    const char *d = zt_tmp_path(name);
    mkdir(d, 0700);
    chmod(d, mode);
    return d;
}

/* An allowed folder as code_dirs wants it: its real path with a '/'. */
static const char *real_dir(const char *d)
{
    char *r = realpath(d, NULL);
    const char *s = zt_fmt("%s/", r ? r : d);
    free(r);
    return s;
}

/* gen -> a sink whose code line is `sink_code`; create (never started)
 * with code_dirs {nodes, extra}; returns the error, the diagnostics in msg. */
static zf_err create(const char *sink_code, const char *extra_dir, bool allow_writable, char *msg,
                     size_t msglen)
{
    char yaml[2048];
    snprintf(
        yaml, sizeof yaml,
        "name: trust\n"
        "sources:\n"
        "  - id: gen\n"
        "    " ZT_LIB("gen") "\n"
                             "    configuration: {count: 1}\n"
                             "    outputs: [out]\n"
                             "sinks:\n"
                             "  - id: sink\n"
                             "    %s\n"
                             "    inputs: [in]\n"
                             "links:\n"
                             "  - {from: {node: gen, output: out}, to: {node: sink, input: in}}\n",
        sink_code);
    char nodes[1024];
    snprintf(nodes, sizeof nodes, "%s", real_dir(zt_fmt("%s/tests/nodes", zt_build_dir())));
    char extra[1024];
    snprintf(extra, sizeof extra, "%s", real_dir(extra_dir));
    const char *dirs[] = {nodes, extra};
    zf_diag *dg = zf_diag_new();
    zf_err e;
    zf_flow *f = zt_flow(yaml, NULL, dg, &e);
    zf_instance *inst = NULL;
    if (f) {
        zf_instance_options io = {
            .code_dirs = dirs, .n_code_dirs = 2, .allow_writable_code = allow_writable};
        e = zf_instance_create(rt, f, &io, dg, &inst);
    }
    char *t = zf_diag_format(dg);
    snprintf(msg, msglen, "%s", t ? t : "");
    free(t);
    zf_diag_free(dg);
    zf_instance_destroy(inst);
    zf_flow_free(f);
    return e;
}

/* A Python sink importing module `mod`. */
static const char *sink_py(const char *mod)
{
    return zt_fmt("import %s\n"
                  "class Sink:\n"
                  "    def __init__(self, context, configuration):\n"
                  "        pass\n"
                  "    def on_input(self, port, data):\n"
                  "        pass\n",
                  mod);
}

static size_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

/* Finding 1: the link's folder never goes on sys.path. */
ZT_CASE(python_symlink_folder_cannot_shadow_the_scripts_imports)
{
    if (!have_python())
        return;
    runtime();
    const char *allowed = mkdir_tmp("allowed", 0755), *client = mkdir_tmp("client", 0755);
    const char *marker = zt_tmp_path("shadowed.txt");
    write_file(zt_fmt("%s/node.py", allowed), sink_py("zt_helper_shadow"), 0644);
    write_file(zt_fmt("%s/zt_helper_shadow.py", allowed), "GENUINE = True\n", 0644);
    write_file(zt_fmt("%s/zt_helper_shadow.py", client),
               zt_fmt("open(%s, 'a').write('x')\n", zt_fmt("'%s'", marker)), 0644);
    const char *link = zt_fmt("%s/node.py", client);
    ZT_OK(symlink(zt_fmt("%s/node.py", allowed), link));
    char msg[4096];
    zf_err e = create(zt_fmt("python: \"%s\"", link), allowed, false, msg, sizeof msg);
    if (e != ZF_OK)
        ZT_FAIL("create: %s: %s", zf_errname(e), msg);
    ZT_EQ(file_size(marker), 0); /* the planted module never ran */
}

typedef struct flipper {
    const char *link, *good, *evil;
    atomic_bool stop;
    atomic_int flips;
} flipper;

static void *flip_main(void *arg)
{
    flipper *fl = arg;
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s.tmp", fl->link);
    for (int i = 0; !atomic_load(&fl->stop); i++) {
        unlink(tmp);
        if (symlink(i % 2 ? fl->evil : fl->good, tmp) == 0 && rename(tmp, fl->link) == 0)
            atomic_fetch_add(&fl->flips, 1);
        usleep(50);
    }
    return NULL;
}

/* Finding 2: what the check approved is exactly what runs. */
ZT_CASE(python_symlink_flipped_during_300_deploys_runs_no_foreign_script)
{
    if (!have_python())
        return;
    runtime();
    const char *allowed = mkdir_tmp("flip-allowed", 0755),
               *foreign = mkdir_tmp("flip-foreign", 0755);
    const char *client = mkdir_tmp("flip-client", 0755);
    const char *marker = zt_tmp_path("foreign-ran.txt");
    char good[1024], evil[1024], link[1024];
    snprintf(good, sizeof good, "%s/node.py", allowed);
    snprintf(evil, sizeof evil, "%s/node.py", foreign);
    snprintf(link, sizeof link, "%s/node.py", client);
    write_file(good, sink_py("os"), 0644);
    write_file(evil, zt_fmt("open('%s', 'a').write('x')\n%s", marker, sink_py("os")), 0644);
    ZT_OK(symlink(good, link));
    flipper fl = {.link = link, .good = good, .evil = evil};
    pthread_t t;
    ZT_OK(pthread_create(&t, NULL, flip_main, &fl));
    int ok = 0, refused = 0, other = 0;
    char msg[4096];
    for (int i = 0; i < 300; i++) {
        zf_err e = create(zt_fmt("python: \"%s\"", link), allowed, false, msg, sizeof msg);
        if (e == ZF_OK)
            ok++;
        else if (e == ZF_EPERM)
            refused++;
        else
            other++;
    }
    atomic_store(&fl.stop, true);
    pthread_join(t, NULL);
    printf("  300 deploys, %d flips: %d ran the allowed script, %d refused, %d other; foreign "
           "executions: %zu\n",
           atomic_load(&fl.flips), ok, refused, other, file_size(marker));
    ZT_EQ(file_size(marker), 0);
    ZT_EQ(ok + refused, 300);
    ZT_CHECK(atomic_load(&fl.flips) >= 300);
}

/* Finding 4: code in a folder others can write, or a file others can
 * write, is refused unless allow_writable_code. */
ZT_CASE(code_writable_by_others_is_refused)
{
    runtime();
    char lib[1024];
    snprintf(lib, sizeof lib, "%s/tests/nodes/libt_count.so", zt_build_dir());
    char buf[1 << 16];
    int in = open(lib, O_RDONLY);
    ZT_CHECK(in >= 0);
    char open_dir[1024];
    snprintf(open_dir, sizeof open_dir, "%s", mkdir_tmp("world", 0755));
    int out = open(zt_fmt("%s/libt_count.so", open_dir), O_WRONLY | O_CREAT | O_TRUNC, 0755);
    ZT_CHECK(out >= 0);
    for (ssize_t k; (k = read(in, buf, sizeof buf)) > 0;)
        ZT_EQ(write(out, buf, (size_t)k), k);
    close(in);
    close(out);
    char msg[4096];
    char code[1200];
    snprintf(code, sizeof code, "library: \"%s/libt_count.so\"", open_dir);
    ZT_EQ(create(code, open_dir, false, msg, sizeof msg), ZF_OK); /* a safe folder: fine */

    chmod(open_dir, 0777); /* anyone may replace the library */
    ZT_EQ(create(code, open_dir, false, msg, sizeof msg), ZF_EPERM);
    ZT_CONTAINS(msg, "is writable by everyone (mode 0777)");
    ZT_CONTAINS(msg, "node 'sink'");
    ZT_EQ(zf_code_path_check(real_dir(open_dir)), ZF_EPERM);
    ZT_EQ(create(code, open_dir, true, msg, sizeof msg), ZF_OK); /* the explicit override */

    chmod(open_dir, 0755);
    chmod(zt_fmt("%s/libt_count.so", open_dir), 0757); /* the file itself */
    ZT_EQ(create(code, open_dir, false, msg, sizeof msg), ZF_EPERM);
    ZT_CONTAINS(msg, "libt_count.so is writable by everyone");
    ZT_EQ(zf_code_path_check(real_dir(open_dir)), ZF_OK);
    chmod(zt_fmt("%s/libt_count.so", open_dir), 0755);
    ZT_EQ(create(code, open_dir, false, msg, sizeof msg), ZF_OK);

    /* another user's folder, a folder another group may write, another
     * user's library (root only: chown) */
    if (geteuid() != 0) {
        printf("  skip: the other-user cases need root (chown)\n");
        return;
    }
    const uid_t nobody = 65534;
    ZT_OK(chown(open_dir, nobody, (gid_t)-1));
    ZT_EQ(create(code, open_dir, false, msg, sizeof msg), ZF_EPERM);
    ZT_CONTAINS(msg, "is owned by uid 65534");
    ZT_EQ(zf_code_path_check(real_dir(open_dir)), ZF_EPERM);
    ZT_OK(chown(open_dir, 0, (gid_t)nobody));
    chmod(open_dir, 0775);
    ZT_EQ(create(code, open_dir, false, msg, sizeof msg), ZF_EPERM);
    ZT_CONTAINS(msg, "is writable by its group (mode 0775)");
    chmod(open_dir, 0755);
    ZT_OK(chown(zt_fmt("%s/libt_count.so", open_dir), nobody, (gid_t)-1));
    ZT_EQ(create(code, open_dir, false, msg, sizeof msg), ZF_EPERM);
    ZT_CONTAINS(msg, "libt_count.so is owned by uid 65534");
    ZT_EQ(create(code, open_dir, true, msg, sizeof msg), ZF_OK); /* the explicit override */
}

/* Finding 12: a FIFO is not a library, and opening it must not block. */
ZT_CASE(fifo_as_library_is_refused_at_once)
{
    runtime();
    const char *dir = mkdir_tmp("fifo", 0755);
    const char *fifo = zt_fmt("%s/libfifo.so", dir);
    ZT_OK(mkfifo(fifo, 0644));
    char msg[4096];
    zf_err e = create(zt_fmt("library: \"%s\"", fifo), dir, false, msg, sizeof msg);
    ZT_EQ(e, ZF_EINVAL);
    ZT_CONTAINS(msg, "is not a regular file (a FIFO); expected a shared library");
    /* zfctl validate's path: no code_dirs */
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "name: fifo\nsources:\n  - id: s\n    library: \"%s\"\n    outputs: [out]\n"
             "sinks:\n  - id: k\n    " ZT_LIB(
                 "count") "\n    inputs: [in]\n"
                          "links:\n  - {from: {node: s, output: out}, to: {node: k, input: in}}\n",
             fifo);
    zf_diag *dg = zf_diag_new();
    zf_flow *f = zt_flow(yaml, NULL, dg, &e);
    ZT_CHECK(f);
    ZT_EQ(zf_flow_check_libraries(f, dg), ZF_EINVAL);
    char *t = zf_diag_format(dg);
    ZT_CONTAINS(t, "not a regular file (a FIFO)");
    free(t);
    zf_diag_free(dg);
    zf_flow_free(f);
}

ZT_CASE(teardown)
{
    zf_runtime_destroy(rt);
    rt = NULL;
}

ZT_MAIN(ZT_ENTRY(python_symlink_folder_cannot_shadow_the_scripts_imports),
        ZT_ENTRY(python_symlink_flipped_during_300_deploys_runs_no_foreign_script),
        ZT_ENTRY(code_writable_by_others_is_refused), ZT_ENTRY(fifo_as_library_is_refused_at_once),
        ZT_ENTRY(teardown))
