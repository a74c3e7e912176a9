/* zfpeer-write: the floor under a recording (docs/operations.md, "Record
 * and replay"): what the kernel charges to put the same bytes into a file,
 * with nothing of zflow around it. Frames live in memfd mappings as a pool's
 * large blocks do (16 of them, refilled before each write so the source is
 * as cold as a camera's frame), and are written by each method a recorder
 * could use:
 *
 *   write     write(2) from the mapping (what zflow's recorder does: writev)
 *   fallocate the same, the file first extended by fallocate in 64 MiB steps
 *   sendfile  sendfile(2) from the frame's memfd (splice inside the kernel)
 *   vmsplice  vmsplice(2) the mapping into a pipe, splice(2) it into the file
 *   mmap      memcpy into a shared mapping of the file (a page fault per page)
 *   memcpy    no file: memcpy into one buffer, faulted in once (a copy alone)
 *
 *   zfpeer-write [DIR] [FRAMES] [FRAME_BYTES]   (default /dev/shm, 120, 10 MiB)
 *
 * It prints the CPU time per frame (the process's, user + system) and what
 * that is as a share of one core at 60 frames per second. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <unistd.h>

#define BUFS 16

static double cpu_s(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static int fail(const char *what)
{
    fprintf(stderr, "zfpeer-write: %s: %s\n", what, strerror(errno));
    return -1;
}

static int write_frame(const char *m, int fd, int src_fd, char *src, size_t len, int pipe_fd[2],
                       char *map, off_t *off, off_t *extent)
{
    size_t done = 0;
    if (!strcmp(m, "mmap") || !strcmp(m, "memcpy")) {
        memcpy(map + (!strcmp(m, "mmap") ? *off : 0), src, len);
        done = len;
    }
    if (!strcmp(m, "fallocate"))
        for (; *off + (off_t)len > *extent; *extent += 64 << 20)
            if (fallocate(fd, FALLOC_FL_KEEP_SIZE, *extent, 64 << 20) != 0)
                return fail("fallocate");
    off_t in = 0;
    while (done < len) {
        ssize_t w = -1;
        if (!strcmp(m, "write") || !strcmp(m, "fallocate")) {
            w = write(fd, src + done, len - done);
        } else if (!strcmp(m, "sendfile")) {
            w = sendfile(fd, src_fd, &in, len - done);
        } else { /* vmsplice */
            size_t step = len - done < (1u << 20) ? len - done : 1u << 20;
            struct iovec v = {src + done, step};
            w = vmsplice(pipe_fd[1], &v, 1, 0);
            for (ssize_t s = 0, k; w > 0 && s < w; s += k)
                if ((k = splice(pipe_fd[0], NULL, fd, NULL, (size_t)(w - s), 0)) <= 0)
                    return fail("splice");
        }
        if (w <= 0)
            return fail(m);
        done += (size_t)w;
    }
    *off += (off_t)len;
    return 0;
}

static int run(const char *m, const char *dir, int frames, size_t len, char **bufs, int *fds)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/zfpeer-write.%d", dir, (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return fail(path);
    int pp[2] = {-1, -1};
    char *map = NULL;
    size_t total = (size_t)frames * len;
    int rc = -1;
    if (pipe(pp) != 0 || fcntl(pp[1], F_SETPIPE_SZ, 1 << 20) < 0) {
        fail("pipe");
        goto out;
    }
    if (!strcmp(m, "memcpy")) {
        total = len;
        map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0);
        if (map == MAP_FAILED) {
            map = NULL;
            fail("mmap");
            goto out;
        }
    } else if (!strcmp(m, "mmap")) {
        if (ftruncate(fd, (off_t)total) != 0) {
            fail("ftruncate");
            goto out;
        }
        map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) {
            map = NULL;
            fail("mmap");
            goto out;
        }
    }
    double spent = 0;
    off_t off = 0, extent = 0;
    for (int i = 0; i < frames; i++) {
        memset(bufs[i % BUFS], i, len); /* the camera's fill: not counted */
        double t0 = cpu_s();
        if (write_frame(m, fd, fds[i % BUFS], bufs[i % BUFS], len, pp, map, &off, &extent) != 0)
            goto out;
        spent += cpu_s() - t0;
    }
    printf("%-9s %7.2f ms of CPU per frame = %5.1f %% of a core at 60 frames/s\n", m,
           spent * 1e3 / frames, spent / frames * 60 * 100);
    rc = 0;
out:
    if (map)
        munmap(map, total);
    if (pp[0] >= 0) {
        close(pp[0]);
        close(pp[1]);
    }
    close(fd);
    unlink(path);
    return rc;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/dev/shm";
    int frames = argc > 2 ? atoi(argv[2]) : 120;
    size_t len = argc > 3 ? strtoull(argv[3], NULL, 0) : 10u << 20;
    if (frames <= 0 || !len) {
        fprintf(stderr, "usage: zfpeer-write [DIR] [FRAMES] [FRAME_BYTES]\n");
        return 2;
    }
    char *bufs[BUFS];
    int fds[BUFS];
    for (int b = 0; b < BUFS; b++) {
        fds[b] = memfd_create("zfpeer-write", MFD_CLOEXEC);
        if (fds[b] < 0 || ftruncate(fds[b], (off_t)len) != 0) {
            fail("memfd");
            return 1;
        }
        bufs[b] = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fds[b], 0);
        if (bufs[b] == MAP_FAILED) {
            fail("mmap");
            return 1;
        }
    }
    printf("zfpeer-write: %d frames of %zu bytes into %s, per method\n", frames, len, dir);
    const char *methods[] = {"write", "fallocate", "sendfile", "vmsplice", "mmap", "memcpy"};
    for (size_t k = 0; k < sizeof methods / sizeof *methods; k++)
        if (run(methods[k], dir, frames, len, bufs, fds) != 0)
            return 1;
    return 0;
}
