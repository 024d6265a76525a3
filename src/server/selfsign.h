/*
 * selfsign.h -- `allot server --tls-self-signed DIR`: a private CA and a
 * server certificate made on first start (selfsign.c).
 */
#ifndef AL_SERVER_SELFSIGN_H
#define AL_SERVER_SELFSIGN_H

/* Makes DIR (0700) and, unless DIR/ca.pem exists, a CA and a server
 * certificate for this host's names and addresses and the host of listen
 * ("HOST:PORT"); sets *cert and *key to DIR/server.pem and DIR/server.key
 * (malloc()ed).  0, or AL_EIO with a message in *cause. */
int al__selfsign(const char *dir, const char *listen, char **cert, char **key,
                 char **cause);

#endif /* AL_SERVER_SELFSIGN_H */
