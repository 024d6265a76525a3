/*
 * tls.c -- TLS sessions for the HTTP client over GnuTLS, which is loaded
 * with dlopen() on first use: the allot command links neither GnuTLS nor
 * libdl (dlopen is libc's), and only an https URL maps the library.  The
 * GnuTLS header gives the types and constants; every function is looked
 * up by name once.  The credentials (the trusted CAs) are loaded once per
 * process and shared by its sessions.
 *
 * May call: libc, the GnuTLS library it loads, base (xmalloc).
 */
#include "tls.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "xmalloc.h"

/* The functions used, by name; a missing one fails the load. */
#define AL_TLS_FUNCS(X)                                                        \
    X(int, gnutls_certificate_allocate_credentials,                            \
      (gnutls_certificate_credentials_t *))                                    \
    X(int, gnutls_certificate_set_x509_system_trust,                           \
      (gnutls_certificate_credentials_t))                                      \
    X(int, gnutls_certificate_set_x509_trust_file,                             \
      (gnutls_certificate_credentials_t, const char *, gnutls_x509_crt_fmt_t)) \
    X(int, gnutls_init, (gnutls_session_t *, unsigned))                        \
    X(void, gnutls_deinit, (gnutls_session_t))                                 \
    X(int, gnutls_set_default_priority, (gnutls_session_t))                    \
    X(int, gnutls_credentials_set,                                             \
      (gnutls_session_t, gnutls_credentials_type_t, void *))                   \
    X(int, gnutls_server_name_set,                                             \
      (gnutls_session_t, gnutls_server_name_type_t, const void *, size_t))     \
    X(void, gnutls_session_set_verify_cert,                                    \
      (gnutls_session_t, const char *, unsigned))                              \
    X(unsigned, gnutls_session_get_verify_cert_status, (gnutls_session_t))     \
    X(int, gnutls_certificate_verification_status_print,                       \
      (unsigned, gnutls_certificate_type_t, gnutls_datum_t *, unsigned))       \
    X(void, gnutls_transport_set_int2, (gnutls_session_t, int, int))           \
    X(void, gnutls_handshake_set_timeout, (gnutls_session_t, unsigned))        \
    X(int, gnutls_handshake, (gnutls_session_t))                               \
    X(ssize_t, gnutls_record_send, (gnutls_session_t, const void *, size_t))   \
    X(ssize_t, gnutls_record_recv, (gnutls_session_t, void *, size_t))         \
    X(size_t, gnutls_record_check_pending, (gnutls_session_t))                 \
    X(int, gnutls_bye, (gnutls_session_t, gnutls_close_request_t))             \
    X(const char *, gnutls_strerror, (int))

static struct {
/* ret and args are a type and a parameter list: no parentheses. */
#define AL_TLS_PTR(ret, name, args)                                            \
    ret(*name) args; // NOLINT(bugprone-macro-parentheses)
    AL_TLS_FUNCS(AL_TLS_PTR)
#undef AL_TLS_PTR
    gnutls_certificate_credentials_t cred;
    char *error; /* why loading failed, or NULL */
} lib;

static char *ca_path;
static pthread_once_t once = PTHREAD_ONCE_INIT;

void
al_tls_set_ca(const char *path)
{
    free(ca_path);
    ca_path = path != NULL && path[0] != '\0' ? al_xstrdup(path) : NULL;
}

static void
load(void)
{
    void *h = dlopen("libgnutls.so.30", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        lib.error =
            al_xasprintf("https needs GnuTLS (libgnutls30): %s", dlerror());
        return;
    }
#define AL_TLS_SYM(ret, name, args)                                            \
    *(void **)&lib.name = dlsym(h, #name);                                     \
    if (lib.name == NULL) {                                                    \
        lib.error = al_xasprintf("GnuTLS lacks %s", #name);                    \
        return;                                                                \
    }
    AL_TLS_FUNCS(AL_TLS_SYM)
#undef AL_TLS_SYM
    int rc = lib.gnutls_certificate_allocate_credentials(&lib.cred);
    if (rc < 0) {
        lib.error = al_xasprintf("TLS: %s", lib.gnutls_strerror(rc));
        return;
    }
    if (ca_path != NULL) {
        rc = lib.gnutls_certificate_set_x509_trust_file(lib.cred, ca_path,
                                                        GNUTLS_X509_FMT_PEM);
        if (rc <= 0)
            lib.error = al_xasprintf(
                "cannot read CA certificates from %s: %s", ca_path,
                rc == 0 ? "no certificate in it" : lib.gnutls_strerror(rc));
    } else {
        rc = lib.gnutls_certificate_set_x509_system_trust(lib.cred);
        if (rc < 0)
            lib.error = al_xasprintf("cannot read the system's CA store: %s",
                                     lib.gnutls_strerror(rc));
    }
}

struct al_tls {
    gnutls_session_t s;
};

/* True when host is a literal address (no SNI for those). */
static bool
is_address(const char *host)
{
    unsigned char a[16];
    return inet_pton(AF_INET, host, a) == 1 ||
           inet_pton(AF_INET6, host, a) == 1;
}

int
al_tls_open(int fd, const char *host, int timeout_ms, al_tls_t **out,
            char **cause)
{
    pthread_once(&once, load);
    if (lib.error != NULL) {
        *cause = al_xstrdup(lib.error);
        return AL_EUNAVAIL;
    }
    gnutls_session_t s;
    int rc = lib.gnutls_init(&s, GNUTLS_CLIENT | GNUTLS_NO_SIGNAL);
    if (rc < 0) {
        *cause = al_xasprintf("TLS: %s", lib.gnutls_strerror(rc));
        return AL_EUNAVAIL;
    }
    lib.gnutls_set_default_priority(s);
    lib.gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, lib.cred);
    if (!is_address(host))
        lib.gnutls_server_name_set(s, GNUTLS_NAME_DNS, host, strlen(host));
    /* Checks the chain and that the certificate names host (a DNS name or
     * an IP address in its subject alternative names). */
    lib.gnutls_session_set_verify_cert(s, host, 0);
    lib.gnutls_transport_set_int2(s, fd, fd);
    lib.gnutls_handshake_set_timeout(s, timeout_ms > 0
                                            ? (unsigned)timeout_ms
                                            : GNUTLS_DEFAULT_HANDSHAKE_TIMEOUT);
    do {
        rc = lib.gnutls_handshake(s);
    } while (rc < 0 && (rc == GNUTLS_E_INTERRUPTED || rc == GNUTLS_E_AGAIN));
    if (rc == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
        unsigned status = lib.gnutls_session_get_verify_cert_status(s);
        gnutls_datum_t why = { NULL, 0 };
        lib.gnutls_certificate_verification_status_print(
            status, GNUTLS_CRT_X509, &why, 0);
        char *text = why.data != NULL ? (char *)why.data : NULL;
        size_t n = text != NULL ? strlen(text) : 0;
        while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '.'))
            text[--n] = '\0';
        *cause = al_xasprintf(
            "the server's TLS certificate is refused for %s: %s (%s)", host,
            n > 0 ? text : "not trusted",
            (status & GNUTLS_CERT_UNEXPECTED_OWNER) != 0
                ? "the URL's host is not among the certificate's names"
                : "trust its CA with --ca FILE, ALLOT_CA or 'ca = FILE' in "
                  "the config");
        free(why.data); /* GnuTLS allocates with malloc() */
        lib.gnutls_deinit(s);
        return AL_EPERM;
    }
    if (rc < 0) {
        *cause = al_xasprintf("TLS handshake with %s failed: %s", host,
                              lib.gnutls_strerror(rc));
        lib.gnutls_deinit(s);
        return AL_EUNAVAIL;
    }
    al_tls_t *t = al_xcalloc(1, sizeof *t);
    t->s = s;
    *out = t;
    return 0;
}

ssize_t
al_tls_send(al_tls_t *t, const void *p, size_t n)
{
    ssize_t w = lib.gnutls_record_send(t->s, p, n);
    if (w == GNUTLS_E_INTERRUPTED || w == GNUTLS_E_AGAIN) {
        errno = EINTR;
        return -1;
    }
    if (w < 0) {
        errno = EPIPE;
        return -1;
    }
    return w;
}

ssize_t
al_tls_recv(al_tls_t *t, void *p, size_t n)
{
    ssize_t r = lib.gnutls_record_recv(t->s, p, n);
    if (r == GNUTLS_E_INTERRUPTED || r == GNUTLS_E_AGAIN) {
        errno = EINTR;
        return -1;
    }
    if (r == GNUTLS_E_PREMATURE_TERMINATION)
        return 0; /* closed without a close_notify: an end all the same */
    if (r < 0) {
        errno = ECONNRESET;
        return -1;
    }
    return r;
}

bool
al_tls_pending(al_tls_t *t)
{
    return lib.gnutls_record_check_pending(t->s) > 0;
}

void
al_tls_close(al_tls_t *t)
{
    if (t == NULL)
        return;
    (void)lib.gnutls_bye(t->s, GNUTLS_SHUT_WR);
    lib.gnutls_deinit(t->s);
    free(t);
}
