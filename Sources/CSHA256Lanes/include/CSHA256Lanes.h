// SHA-256 of up to sixteen independent messages at once, one message per 32-bit lane of AVX-512
// registers ("multi-buffer" hashing). Written by hand because it is the render pass's largest cost
// on x86 without SHA instructions, and no Debian library offers it (OpenSSL hashes one message at
// a time; Intel's isa-l_crypto, which has it, is not packaged). Checked against OpenSSL's SHA-256
// on every length from 0 to several blocks (Tests/DigestTests).
#ifndef CSHA256LANES_H
#define CSHA256LANES_H

#include <stddef.h>
#include <stdint.h>

/// The most messages one call hashes.
#define APPCONFIG_SHA256_LANES 16

/// Whether this CPU runs the lanes (AVX-512 F and BW on x86-64, checked once); when not, callers
/// hash one message at a time with OpenSSL.
int appconfig_sha256_lanes_available(void);

/// Writes the SHA-256 of messages[i] (lengths[i] bytes) to digests + 32 * i for i < count
/// (count <= 16). Only when `appconfig_sha256_lanes_available()`.
void appconfig_sha256_lanes(const uint8_t *const *messages, const size_t *lengths, int count, uint8_t *digests);

#endif
