/*
 * zflow/version.h — the version of zflow: the one place it is written.
 *
 * CMake reads ZF_VERSION_MAJOR/MINOR/PATCH from this file for project(),
 * the shared library's soname, the pkg-config file, the CMake package and
 * the .deb; the installed Python package gets a _version.py made from it.
 * Change the three numbers here and nowhere else.
 */
#ifndef ZFLOW_VERSION_H
#define ZFLOW_VERSION_H

#define ZF_VERSION_MAJOR 0
#define ZF_VERSION_MINOR 1
#define ZF_VERSION_PATCH 0

#define ZF_VERSION_STR_(x) #x
#define ZF_VERSION_STR(x)  ZF_VERSION_STR_(x)
/** "MAJOR.MINOR.PATCH", e.g. "0.1.0". */
#define ZF_VERSION_STRING                                                                          \
    ZF_VERSION_STR(ZF_VERSION_MAJOR)                                                               \
    "." ZF_VERSION_STR(ZF_VERSION_MINOR) "." ZF_VERSION_STR(ZF_VERSION_PATCH)

#endif
