/* Who can change node code: a file or folder, and every folder above it,
 * must be changeable only by root or this process's user. */
#include "runtime/runtime.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One component. `leaf`: the file or folder itself (no one else may write
 * it); above it, a folder writable by others is fine if it is sticky (like
 * /tmp: no one can rename or remove what they do not own). */
static zf_err check_one(const char *path, const struct stat *st, bool leaf)
{
    uid_t me = geteuid();
    if (st->st_uid != 0 && st->st_uid != me)
        return zfi_error(ZF_EPERM,
                         "%s is owned by uid %u: node code and its folders must belong to "
                         "root or to this daemon's user (uid %u)",
                         path, (unsigned)st->st_uid, (unsigned)me);
    bool sticky_dir = S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX);
    bool other_w = st->st_mode & S_IWOTH;
    bool group_w = (st->st_mode & S_IWGRP) && st->st_gid != getegid();
    if ((other_w || group_w) && (leaf || !sticky_dir))
        return zfi_error(ZF_EPERM,
                         "%s is writable by %s (mode %04o): another user could replace node "
                         "code there",
                         path, other_w ? "everyone" : "its group", (unsigned)(st->st_mode & 07777));
    return ZF_OK;
}

zf_err zfi_trust_check(const char *real, const struct stat *leaf_st)
{
    if (!real || real[0] != '/')
        return zfi_error(ZF_EINVAL, "zf_code_path_check: %s is not an absolute path",
                         real ? real : "(null)");
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", real) >= (int)sizeof p)
        return zfi_error(ZF_EINVAL, "zf_code_path_check: path too long");
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    for (bool leaf = true;; leaf = false) {
        struct stat st;
        if (leaf && leaf_st)
            st = *leaf_st;
        else if (lstat(p, &st) != 0)
            return zfi_error(ZF_ENOTFOUND, "%s: %s", p, strerror(errno));
        zf_err e = check_one(p, &st, leaf);
        if (e != ZF_OK)
            return e;
        char *slash = strrchr(p, '/');
        if (!slash || slash == p) {
            if (p[1] == '\0')
                return ZF_OK; /* "/" done */
            p[1] = '\0';      /* then "/" itself */
            continue;
        }
        *slash = '\0';
    }
}

zf_err zf_code_path_check(const char *path)
{
    return zfi_trust_check(path, NULL);
}
