// SHA-256 (FIPS 180-4) in sixteen lanes: lane i holds message i's state, each round is done for
// all lanes by one instruction per step. Messages of different lengths run together: a lane whose
// message has no more blocks keeps its state (a masked add) while the others go on. Written by
// hand: OpenSSL hashes one message at a time, and without SHA instructions (this project's VM)
// a device's digest cost more than rendering it (SHA256Lanes.swift has the rates).
#include "CSHA256Lanes.h"
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static const uint32_t IV[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

int appconfig_sha256_lanes_available(void) {
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    }
    return known;
}

/// Block `block` of a message as SHA-256 pads it: the message's bytes, 0x80, zeros, and in the
/// last block its length in bits, big-endian.
static void padded_block(const uint8_t *message, size_t length, size_t block, size_t blocks, uint8_t *out) {
    size_t start = block * 64;
    size_t have = length > start ? length - start : 0;
    if (have > 64) have = 64;
    if (have) memcpy(out, message + start, have);
    memset(out + have, 0, 64 - have);
    if (length >= start && length - start < 64) out[length - start] = 0x80;
    if (block == blocks - 1) {
        uint64_t bits = (uint64_t)length * 8;
        for (int i = 0; i < 8; i++) out[63 - i] = (uint8_t)(bits >> (8 * i));
    }
}

#define ROR(x, n) _mm512_ror_epi32((x), (n))
#define XOR3(a, b, c) _mm512_ternarylogic_epi32((a), (b), (c), 0x96)
#define CH(e, f, g) _mm512_ternarylogic_epi32((e), (f), (g), 0xCA)
#define MAJ(a, b, c) _mm512_ternarylogic_epi32((a), (b), (c), 0xE8)

/// Round t: the eight words named in their order for this round, so that eight rounds in a row
/// rename the registers instead of moving them (a loop moved all eight every round).
#define ROUND(a, b, c, d, e, f, g, h, t) do { \
        __m512i t1 = _mm512_add_epi32(_mm512_add_epi32(h, XOR3(ROR(e, 6), ROR(e, 11), ROR(e, 25))), \
                                      _mm512_add_epi32(CH(e, f, g), _mm512_add_epi32(w[(t) & 15], _mm512_set1_epi32((int)K[t])))); \
        __m512i t2 = _mm512_add_epi32(XOR3(ROR(a, 2), ROR(a, 13), ROR(a, 22)), MAJ(a, b, c)); \
        d = _mm512_add_epi32(d, t1); \
        h = _mm512_add_epi32(t1, t2); \
    } while (0)

/// Word t of the schedule, in place of word t - 16.
#define SCHEDULE(t) do { \
        __m512i w15 = w[((t) - 15) & 15], w2 = w[((t) - 2) & 15]; \
        __m512i s0 = XOR3(ROR(w15, 7), ROR(w15, 18), _mm512_srli_epi32(w15, 3)); \
        __m512i s1 = XOR3(ROR(w2, 17), ROR(w2, 19), _mm512_srli_epi32(w2, 10)); \
        w[(t) & 15] = _mm512_add_epi32(_mm512_add_epi32(w[(t) & 15], s0), _mm512_add_epi32(w[((t) - 7) & 15], s1)); \
    } while (0)

#define EIGHT_ROUNDS(t) do { \
        if ((t) >= 16) for (int k = 0; k < 8; k++) SCHEDULE((t) + k); \
        ROUND(a, b, c, d, e, f, g, h, (t) + 0); \
        ROUND(h, a, b, c, d, e, f, g, (t) + 1); \
        ROUND(g, h, a, b, c, d, e, f, (t) + 2); \
        ROUND(f, g, h, a, b, c, d, e, (t) + 3); \
        ROUND(e, f, g, h, a, b, c, d, (t) + 4); \
        ROUND(d, e, f, g, h, a, b, c, (t) + 5); \
        ROUND(c, d, e, f, g, h, a, b, (t) + 6); \
        ROUND(b, c, d, e, f, g, h, a, (t) + 7); \
    } while (0)

/// Sixteen blocks, one a register, turned on their side: w[t] gets word t of every block,
/// byte-swapped to big-endian. Gathering the words from a copy of the blocks made each load wait
/// for the copy's stores.
__attribute__((target("avx512f,avx512bw")))
static void transpose(const __m512i r[16], __m512i w[16], __m512i swap) {
    __m512i p[16], q[16];
    for (int i = 0; i < 8; i++) {
        p[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        p[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    // q[4i + j]: word j, j + 4, j + 8 and j + 12 (one a 128-bit lane) of blocks 4i to 4i + 3.
    for (int i = 0; i < 4; i++) {
        q[4 * i + 0] = _mm512_unpacklo_epi64(p[4 * i + 0], p[4 * i + 2]);
        q[4 * i + 1] = _mm512_unpackhi_epi64(p[4 * i + 0], p[4 * i + 2]);
        q[4 * i + 2] = _mm512_unpacklo_epi64(p[4 * i + 1], p[4 * i + 3]);
        q[4 * i + 3] = _mm512_unpackhi_epi64(p[4 * i + 1], p[4 * i + 3]);
    }
    for (int j = 0; j < 4; j++) {
        __m512i v0 = _mm512_shuffle_i32x4(q[j], q[4 + j], 0x88), v1 = _mm512_shuffle_i32x4(q[j], q[4 + j], 0xDD);
        __m512i v2 = _mm512_shuffle_i32x4(q[8 + j], q[12 + j], 0x88), v3 = _mm512_shuffle_i32x4(q[8 + j], q[12 + j], 0xDD);
        w[j] = _mm512_shuffle_epi8(_mm512_shuffle_i32x4(v0, v2, 0x88), swap);
        w[j + 4] = _mm512_shuffle_epi8(_mm512_shuffle_i32x4(v1, v3, 0x88), swap);
        w[j + 8] = _mm512_shuffle_epi8(_mm512_shuffle_i32x4(v0, v2, 0xDD), swap);
        w[j + 12] = _mm512_shuffle_epi8(_mm512_shuffle_i32x4(v1, v3, 0xDD), swap);
    }
}

__attribute__((target("avx512f,avx512bw")))
void appconfig_sha256_lanes(const uint8_t *const *messages, const size_t *lengths, int count, uint8_t *digests) {
    size_t blocks[16];
    size_t most = 0;
    for (int i = 0; i < 16; i++) {
        blocks[i] = i < count ? (lengths[i] + 9 + 63) / 64 : 0;
        if (blocks[i] > most) most = blocks[i];
    }
    __m512i state[8];
    for (int j = 0; j < 8; j++) state[j] = _mm512_set1_epi32((int)IV[j]);
    // A lane's block with its padding, made here when it is not wholly the message's bytes.
    uint8_t padded[16][64] __attribute__((aligned(64)));
    const __m512i swap = _mm512_broadcast_i32x4(_mm_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12));
    for (size_t block = 0; block < most; block++) {
        __mmask16 live = 0;
        __m512i r[16], w[16];
        for (int i = 0; i < 16; i++) {
            if (block >= blocks[i]) { r[i] = _mm512_setzero_si512(); continue; }
            live |= (__mmask16)(1u << i);
            if ((block + 1) * 64 <= lengths[i]) {
                r[i] = _mm512_loadu_si512((const void *)(messages[i] + block * 64));
            } else {
                padded_block(messages[i], lengths[i], block, blocks[i], padded[i]);
                r[i] = _mm512_load_si512((const void *)padded[i]);
            }
        }
        transpose(r, w, swap);
        __m512i a = state[0], b = state[1], c = state[2], d = state[3];
        __m512i e = state[4], f = state[5], g = state[6], h = state[7];
        EIGHT_ROUNDS(0); EIGHT_ROUNDS(8); EIGHT_ROUNDS(16); EIGHT_ROUNDS(24);
        EIGHT_ROUNDS(32); EIGHT_ROUNDS(40); EIGHT_ROUNDS(48); EIGHT_ROUNDS(56);
        __m512i out[8] = {a, b, c, d, e, f, g, h};
        for (int j = 0; j < 8; j++) state[j] = _mm512_mask_add_epi32(state[j], live, state[j], out[j]);
    }
    uint32_t words[8][16] __attribute__((aligned(64)));
    for (int j = 0; j < 8; j++) _mm512_store_si512((void *)words[j], _mm512_shuffle_epi8(state[j], swap));
    for (int i = 0; i < count; i++)
        for (int j = 0; j < 8; j++) memcpy(digests + 32 * i + 4 * j, &words[j][i], 4);
}

#else

int appconfig_sha256_lanes_available(void) { return 0; }

void appconfig_sha256_lanes(const uint8_t *const *messages, const size_t *lengths, int count, uint8_t *digests) {
    (void)messages; (void)lengths; (void)count; (void)digests;
}

#endif
