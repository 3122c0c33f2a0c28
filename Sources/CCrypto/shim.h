#ifndef APPCONFIG_CCRYPTO_SHIM_H
#define APPCONFIG_CCRYPTO_SHIM_H
// OpenSSL's libcrypto, for SHA-256 only (content-addressed delivery assets, tokens, fingerprints).
// The one-shot SHA256_Init/Update/Final on a context on the caller's stack: OpenSSL 3's SHA256()
// goes through EVP, which fetches the algorithm and allocates a context per call (two mallocs and
// a lock per device digest). Deprecated in 3.0, not removed; their declarations are wanted.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#include <openssl/evp.h>
#endif
