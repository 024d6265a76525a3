/*
 * error.h -- the one error space of allot.
 *
 * Every function that can fail returns an int: 0 on success, a negative
 * AL_E* code otherwise.  The codes, their names and their messages come from
 * one X-macro so that they can never drift apart (libuv's UV_ERRNO_MAP).
 */
#ifndef AL_ERROR_H
#define AL_ERROR_H

#define AL_ERRNO_MAP(X)                                                        \
    X(ENOMEM, -1, "out of memory")                                             \
    X(EINVAL, -2, "invalid argument")                                          \
    X(ERANGE, -3, "value out of range")                                        \
    X(ENOENT, -4, "no such object")                                            \
    X(EEXIST, -5, "object already exists")                                     \
    X(EIO, -6, "input/output error")                                           \
    X(EPARSE, -7, "malformed input")                                           \
    X(ELIMIT, -8, "limit exceeded")                                            \
    X(EBUSY, -9, "resource busy")                                              \
    X(ENOTSUP, -10, "operation not supported")                                 \
    X(EPERM, -11, "permission denied")                                         \
    X(EAUTH, -12, "authentication required")                                   \
    X(ETIMEDOUT, -13, "timed out")                                             \
    X(EUNAVAIL, -14, "service unavailable")

enum {
#define AL_ERR_ENUM(name, val, msg) AL_##name = (val),
    AL_ERRNO_MAP(AL_ERR_ENUM)
#undef AL_ERR_ENUM
};

/* Human message for an error code; never NULL.  Unknown codes give
 * "unknown error". */
const char *al_strerror(int err);

/* Symbolic name ("ENOMEM") of an error code; never NULL.  Unknown codes give
 * "EUNKNOWN". */
const char *al_err_name(int err);

#endif /* AL_ERROR_H */
