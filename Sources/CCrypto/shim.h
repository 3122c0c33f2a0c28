#ifndef APPCONFIG_CCRYPTO_SHIM_H
#define APPCONFIG_CCRYPTO_SHIM_H
// OpenSSL's libcrypto: SHA-256 (content-addressed delivery assets, tokens, fingerprints) and the
// checks of credential files.
// The one-shot SHA256_Init/Update/Final on a context on the caller's stack: OpenSSL 3's SHA256()
// goes through EVP, which fetches the algorithm and allocates a context per call (two mallocs and
// a lock per device digest). Deprecated in 3.0, not removed; their declarations are wanted.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#include <openssl/evp.h>
// Credential files checked before they are delivered: PKCS#12 identities opened with their
// password, X.509 certificates parsed (PEM or DER).
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>
#endif
