/*
 * tls.h -- the client side of TLS for http.c (https:// URLs): GnuTLS,
 * loaded with dlopen() the first time an https URL is used, so that the
 * allot command maps no TLS library when it talks plain HTTP (its start
 * cost; see docs/development.md, "TLS in the client").  The server's
 * certificate is checked against the system's CA store, or against the CA
 * file set with al_tls_set_ca(), and against the URL's host name or
 * address.
 */
#ifndef AL_TLS_H
#define AL_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct al_tls al_tls_t;

/* The CA file (PEM) that signs the servers' certificates; NULL for the
 * system's store.  Call before the first https request. */
void al_tls_set_ca(const char *path);

/* Runs the handshake on the connected socket fd for host (a name or an
 * address), within timeout_ms (<= 0: none).  0 and *out, or AL_EUNAVAIL
 * (the library cannot be loaded, the handshake failed) or AL_EPERM (the
 * certificate is not trusted) with a message in *cause (caller frees). */
int al_tls_open(int fd, const char *host, int timeout_ms, al_tls_t **out,
                char **cause);
/* As send()/recv(): bytes moved, 0 at the end of the stream (recv), or -1
 * (errno EINTR to try again, else an error). */
ssize_t al_tls_send(al_tls_t *t, const void *p, size_t n);
ssize_t al_tls_recv(al_tls_t *t, void *p, size_t n);
/* True when decrypted bytes wait in the session (poll() would not see
 * them). */
bool al_tls_pending(al_tls_t *t);
/* Ends the session (without waiting for the peer) and frees it; the
 * caller closes the socket. */
void al_tls_close(al_tls_t *t);

#endif /* AL_TLS_H */
