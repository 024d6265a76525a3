/*
 * selfsign.c -- `allot server --tls-self-signed DIR`: TLS without a PKI.
 * On first start it makes a private CA (DIR/ca.pem, its key DIR/ca.key)
 * and a server certificate it signs (DIR/server.pem, DIR/server.key) for
 * this host's name, localhost, 127.0.0.1, ::1 and the --listen address;
 * later starts use what DIR holds.  Clients trust DIR/ca.pem (`allot --ca`,
 * `ca = FILE`, the agent's --ca).  Keys are ECDSA P-256, mode 0600.
 *
 * May call: GnuTLS (X.509), common (files, logging).
 */
#include "selfsign.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "fs.h"
#include "log.h"
#include "xmalloc.h"

#define DAY ((time_t)24 * 3600)

/* Writes a PEM datum to DIR/leaf with mode. */
static int
put(const char *dir, const char *leaf, const gnutls_datum_t *d, int mode,
    char **cause)
{
    char *path = al_xasprintf("%s/%s", dir, leaf);
    int rc = al_fs_write_file(path, (const char *)d->data, d->size,
                              (mode_t)mode, AL_FS_SYNC);
    if (rc != 0)
        *cause = al_xasprintf("cannot write %s: %s", path, strerror(errno));
    free(path);
    return rc != 0 ? AL_EIO : 0;
}

/* A fresh certificate for key: serial, validity, subject. */
static int
base(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, const char *cn, int days)
{
    unsigned char serial[16];
    if (getrandom(serial, sizeof serial, 0) != (ssize_t)sizeof serial)
        return -1;
    serial[0] &= 0x7f; /* positive */
    time_t now = time(NULL);
    char *dn = al_xasprintf("CN=%s", cn);
    const char *err = NULL;
    int rc = gnutls_x509_crt_set_version(crt, 3);
    if (rc >= 0)
        rc = gnutls_x509_crt_set_serial(crt, serial, sizeof serial);
    if (rc >= 0)
        rc = gnutls_x509_crt_set_activation_time(crt, now - 3600);
    if (rc >= 0)
        rc = gnutls_x509_crt_set_expiration_time(crt, now + days * DAY);
    if (rc >= 0)
        rc = gnutls_x509_crt_set_dn(crt, dn, &err);
    if (rc >= 0)
        rc = gnutls_x509_crt_set_key(crt, key);
    free(dn);
    return rc;
}

/* Adds host (an address or a DNS name) to crt's subject alternative
 * names. */
static int
add_name(gnutls_x509_crt_t crt, const char *host)
{
    unsigned char a[16];
    if (inet_pton(AF_INET, host, a) == 1)
        return gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS,
                                                    a, 4, GNUTLS_FSAN_APPEND);
    if (inet_pton(AF_INET6, host, a) == 1)
        return gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS,
                                                    a, 16, GNUTLS_FSAN_APPEND);
    return gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, host,
                                                (unsigned)strlen(host),
                                                GNUTLS_FSAN_APPEND);
}

static int
make(const char *dir, const char *listen_host, char **cause)
{
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    gnutls_x509_privkey_t cakey = NULL, key = NULL;
    gnutls_x509_crt_t ca = NULL, crt = NULL;
    gnutls_datum_t d[4] = {
        { NULL, 0 }, { NULL, 0 }, { NULL, 0 }, { NULL, 0 }
    };
    unsigned bits = GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1);
    char *cacn = al_xasprintf("allot CA on %s", host);
    int rc = gnutls_x509_privkey_init(&cakey);
    if (rc >= 0)
        rc = gnutls_x509_privkey_generate(cakey, GNUTLS_PK_ECDSA, bits, 0);
    if (rc >= 0)
        rc = gnutls_x509_privkey_init(&key);
    if (rc >= 0)
        rc = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA, bits, 0);
    /* The CA: ten years, signs certificates only. */
    if (rc >= 0)
        rc = gnutls_x509_crt_init(&ca);
    if (rc >= 0)
        rc = base(ca, cakey, cacn, 3650);
    if (rc >= 0)
        rc = gnutls_x509_crt_set_basic_constraints(ca, 1, 0);
    if (rc >= 0)
        rc = gnutls_x509_crt_set_key_usage(ca, GNUTLS_KEY_KEY_CERT_SIGN |
                                                   GNUTLS_KEY_CRL_SIGN);
    if (rc >= 0)
        rc = gnutls_x509_crt_sign2(ca, ca, cakey, GNUTLS_DIG_SHA256, 0);
    /* The server's: 825 days, for this host's names and addresses. */
    if (rc >= 0)
        rc = gnutls_x509_crt_init(&crt);
    if (rc >= 0)
        rc = base(crt, key, host, 825);
    if (rc >= 0)
        rc = gnutls_x509_crt_set_basic_constraints(crt, 0, -1);
    if (rc >= 0)
        rc = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE);
    if (rc >= 0)
        rc = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER,
                                                 0);
    const char *names[] = { host, "localhost", "127.0.0.1", "::1",
                            listen_host };
    for (size_t i = 0; rc >= 0 && i < sizeof names / sizeof *names; i++)
        if (names[i] != NULL && names[i][0] != '\0' &&
            (i < 4 || (strcmp(names[i], "0.0.0.0") != 0 &&
                       strcmp(names[i], "127.0.0.1") != 0)))
            rc = add_name(crt, names[i]);
    if (rc >= 0)
        rc = gnutls_x509_crt_sign2(crt, ca, cakey, GNUTLS_DIG_SHA256, 0);
    if (rc >= 0)
        rc = gnutls_x509_crt_export2(ca, GNUTLS_X509_FMT_PEM, &d[0]);
    if (rc >= 0)
        rc = gnutls_x509_privkey_export2(cakey, GNUTLS_X509_FMT_PEM, &d[1]);
    if (rc >= 0)
        rc = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d[2]);
    if (rc >= 0)
        rc = gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &d[3]);
    int out = 0;
    if (rc < 0) {
        *cause = al_xasprintf("cannot make a TLS certificate: %s",
                              gnutls_strerror(rc));
        out = AL_EIO;
    } else if ((out = put(dir, "ca.key", &d[1], 0600, cause)) == 0 &&
               (out = put(dir, "server.key", &d[3], 0600, cause)) == 0 &&
               (out = put(dir, "server.pem", &d[2], 0644, cause)) == 0) {
        /* ca.pem last: its presence says the set is whole. */
        out = put(dir, "ca.pem", &d[0], 0644, cause);
    }
    for (int i = 0; i < 4; i++)
        gnutls_free(d[i].data);
    gnutls_x509_crt_deinit(ca);
    gnutls_x509_crt_deinit(crt);
    gnutls_x509_privkey_deinit(cakey);
    gnutls_x509_privkey_deinit(key);
    free(cacn);
    return out;
}

int
al__selfsign(const char *dir, const char *listen, char **cert, char **key,
             char **cause)
{
    if (al_fs_mkdir_p(dir, 0700) != 0) {
        *cause = al_xasprintf("cannot create %s: %s", dir, strerror(errno));
        return AL_EIO;
    }
    char *ca = al_xasprintf("%s/ca.pem", dir);
    bool have = access(ca, R_OK) == 0;
    int rc = 0;
    if (!have) {
        /* The --listen host, unless it is the any-address or a port only. */
        char lhost[256] = "";
        const char *colon = listen != NULL ? strrchr(listen, ':') : NULL;
        if (colon != NULL && (size_t)(colon - listen) < sizeof lhost) {
            size_t n = (size_t)(colon - listen);
            const char *h = listen;
            if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
                h++;
                n -= 2;
            }
            memcpy(lhost, h, n);
            lhost[n] = '\0';
        }
        rc = make(dir, lhost, cause);
        if (rc == 0)
            al_info("made a private CA (%s) and a server certificate signed "
                    "by it; clients trust it with --ca %s",
                    ca, ca);
    }
    if (rc == 0) {
        *cert = al_xasprintf("%s/server.pem", dir);
        *key = al_xasprintf("%s/server.key", dir);
    }
    free(ca);
    return rc;
}
