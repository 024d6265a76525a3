/*
 * stream.h -- the framing of an interactive session's stream (`allot run`,
 * attach, exec, port-forward) and the dial that opens one.
 *
 * A stream is one TCP connection turned over by an HTTP/1.1 Upgrade
 * ("Upgrade: allot-stream"): the CLI's to the controller, the agent's to
 * the controller, which splices the two.  Both directions carry frames: a
 * type byte, the payload's length (4 bytes, big-endian), the payload.
 */
#ifndef AL_STREAM_H
#define AL_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "http.h"

/* Frame types.  From the client: STDIN, EOF (stdin ended), RESIZE, SIGNAL,
 * CLOSE (detach).  From the agent: STDOUT, STDERR, EXIT, NOTICE, ERROR,
 * CLOSE (the task's end of the stream is gone).  The controller adds
 * NOTICE frames of its own between the agent's. */
enum {
    AL_FR_STDIN = 'i',
    AL_FR_EOF = 'z',    /* no payload */
    AL_FR_RESIZE = 'r', /* rows, cols: 2 bytes each */
    AL_FR_SIGNAL = 'k', /* a signal number: 1 byte */
    AL_FR_STDOUT = 'o',
    AL_FR_STDERR = 'e',
    AL_FR_EXIT = 'x',   /* exit code, signal: 4 bytes each */
    AL_FR_NOTICE = 'n', /* a line of text for the user (stderr) */
    AL_FR_ERROR = 'f',  /* why the stream cannot go on; CLOSE follows */
    AL_FR_CLOSE = 'c',  /* no payload */
};

#define AL_STREAM_HDR 5
/* The largest payload; a longer one is malformed. */
#define AL_STREAM_MAX 65536

typedef struct al_frame {
    int type;
    const unsigned char *data; /* into the parsed buffer */
    size_t len;
} al_frame_t;

/*
 * Reads the frame at the start of buf[0..len): 1 with *f and *used (the
 * frame's bytes) set; 0 when the frame is not whole yet; AL_EPARSE for an
 * unknown type, a payload over AL_STREAM_MAX or of the wrong size for its
 * type, with a message in *cause (caller frees) when cause is not NULL.
 */
int al_stream_parse(const void *buf, size_t len, al_frame_t *f, size_t *used,
                    char **cause);
/* Writes a frame header for a payload of len bytes. */
void al_stream_hdr(unsigned char hdr[AL_STREAM_HDR], int type, size_t len);
/* Appends a whole frame to b (len <= AL_STREAM_MAX). */
void al_stream_put(al_buf_t *b, int type, const void *data, size_t len);
void al_stream_put_resize(al_buf_t *b, int rows, int cols);
void al_stream_put_exit(al_buf_t *b, int code, int sig);
/* The payloads of RESIZE, EXIT and SIGNAL frames (al_stream_parse() has
 * checked their sizes). */
void al_stream_resize_of(const al_frame_t *f, int *rows, int *cols);
void al_stream_exit_of(const al_frame_t *f, int *code, int *sig);

/* Appends s to b percent-encoded for a query string. */
void al_stream_urlenc(al_buf_t *b, const char *s);

/*
 * Opens a stream: connects to u, sends POST path (after u->prefix; with
 * its query) with the token and the Upgrade headers, and reads the answer.
 * On 101 returns 0 with the connected socket (blocking, TCP_NODELAY) in
 * *fd and the bytes that came after the answer's head appended to extra.
 * Otherwise an error (AL_EUNAVAIL: no connection; AL_ENOENT 404; AL_EPERM
 * 403; AL_EAUTH 401; AL_EINVAL other 4xx; AL_EIO other) with the server's
 * message in *cause.
 */
int al_stream_dial(const al_url_t *u, const char *path, const char *token,
                   int *fd, al_buf_t *extra, char **cause);

/* Writes all of p (blocking descriptor); 0 or -1. */
int al_stream_write_all(int fd, const void *p, size_t n);

#endif /* AL_STREAM_H */
