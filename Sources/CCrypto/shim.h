#ifndef APPCONFIG_CCRYPTO_SHIM_H
#define APPCONFIG_CCRYPTO_SHIM_H
// OpenSSL's libcrypto, for SHA-256 only (content-addressed delivery assets, tokens, fingerprints).
#include <openssl/sha.h>
#include <openssl/evp.h>
#endif
