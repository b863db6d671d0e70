/*
 * ssl_shim.c: built twice into two tiny libraries that make civetweb 1.15's
 * TLS work with OpenSSL 3 (docs/HARDENING.md).  civetweb dlopens the
 * unversioned names "libcrypto.so" and "libssl.so" and looks every function
 * up in them; OpenSSL 3 turned SSL_get_peer_certificate into a macro, so
 * libssl.so.3 lacks it and civetweb refuses TLS.  server.c loads
 * build/libprofendpoints-crypto.so (SONAME libcrypto.so, needs
 * libcrypto.so.3) and build/libprofendpoints-ssl.so (SONAME libssl.so, needs
 * libssl.so.3, plus the one missing function) before civetweb's dlopen; the
 * dynamic loader matches civetweb's names to these SONAMEs, and dlsym on them
 * finds OpenSSL's functions among their dependencies.  No libssl-dev needed.
 */
#ifdef PE_SSL_SHIM
typedef struct ssl_st SSL;
typedef struct x509_st X509;

X509 *SSL_get1_peer_certificate(const SSL *s);
X509 *SSL_get_peer_certificate(const SSL *s);

/* OpenSSL 1.1's name: the caller owns a reference, as with get1. */
X509 *
SSL_get_peer_certificate(const SSL *s)
{
    return SSL_get1_peer_certificate(s);
}
#endif
