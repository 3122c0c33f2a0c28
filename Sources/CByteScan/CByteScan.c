// Most functions are static inline in include/CByteScan.h: inlined where Swift calls them.
#include "CByteScan.h"
#include <string.h>

/// The first quote at or after `q` (n when none), counting the newlines before it and gathering
/// the high bits of the bytes before it.
static inline intptr_t next_quote(const uint8_t *b, intptr_t n, intptr_t q, intptr_t *newlines, uint32_t *high) {
#if defined(__SSE2__)
    while (q + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(b + q));
        uint32_t quotes = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
        uint32_t lf = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')));
        uint32_t hi = (uint32_t)_mm_movemask_epi8(v);
        if (quotes) {
            uint32_t before = (1u << __builtin_ctz(quotes)) - 1;
            *newlines += __builtin_popcount(lf & before);
            *high |= hi & before;
            return q + __builtin_ctz(quotes);
        }
        *newlines += __builtin_popcount(lf);
        *high |= hi;
        q += 16;
    }
#endif
    while (q < n && b[q] != '"') {
        if (b[q] == '\n') *newlines += 1;
        *high |= b[q] & 0x80;
        q++;
    }
    return q;
}

intptr_t appconfig_csv_record(const uint8_t *b, intptr_t n, intptr_t p, uint8_t delimiter,
                             intptr_t *fields, intptr_t capacity, intptr_t *count, intptr_t *lines, int32_t *high) {
    intptr_t k = 0, newlines = 0;
    uint32_t hi = 0;
    for (;;) {
        if (k == capacity) return -1;
        if (p < n && b[p] == '"') {
            intptr_t start = p + 1, q = start;
            int escaped = 0;
            for (;;) {
                q = next_quote(b, n, q, &newlines, &hi);
                if (q >= n) return -1;  // never closed
                if (q + 1 < n && b[q + 1] == '"') { escaped = 1; q += 2; continue; }
                break;
            }
            intptr_t raw = q - start;
            fields[2 * k] = start;
            fields[2 * k + 1] = escaped ? -raw - 1 : raw;
            k++;
            p = q + 1;
            if (p < n && b[p] != delimiter && b[p] != '\n' && b[p] != '\r') return -1;  // text after the quote
        } else {
            intptr_t start = p;
            for (;;) {
#if defined(__SSE2__)
                if (p + 16 <= n) {
                    uint32_t bits = appconfig_csv_stops16(b + p, delimiter);
                    uint32_t stops = bits & 0xFFFF;
                    if (stops) {
                        int z = __builtin_ctz(stops);
                        hi |= (bits >> 16) & ((1u << z) - 1);
                        p += z;
                        break;
                    }
                    hi |= bits >> 16;
                    p += 16;
                    continue;
                }
#endif
                while (p < n && b[p] != delimiter && b[p] != '\n' && b[p] != '\r') { hi |= b[p] & 0x80; p++; }
                break;
            }
            fields[2 * k] = start;
            fields[2 * k + 1] = p - start;
            k++;
        }
        if (p >= n) {  // the input ends the record: no line ends
            *count = k; *lines = newlines; *high = hi != 0;
            return p;
        }
        uint8_t c = b[p++];
        if (c == delimiter) continue;
        if (c == '\r' && p < n && b[p] == '\n') p++;
        *count = k; *lines = newlines + 1; *high = hi != 0;
        return p;
    }
}

int appconfig_dn_counts_plain(const uint8_t *p, intptr_t n) {
    intptr_t equals = 0, commas = 0;
#if defined(__SSE2__)
    if (n >= 16) {
        const __m128i top = _mm_set1_epi8((char)0x80), lanes = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        // Per lane, the `=` and `,` seen (a compare's 0xFF subtracted adds one), summed every 255
        // rounds and at the end (no popcount instruction in the x86-64 baseline: the builtin
        // is a call).
        __m128i equalsPerLane = _mm_setzero_si128(), commasPerLane = _mm_setzero_si128();
        int rounds = 0;
        for (intptr_t i = 0;;) {
            // The last sixteen bytes are read again when n is not a multiple of sixteen, those
            // counted before left out of the counts (a byte loop over the rest was half the time).
            __m128i fresh = _mm_set1_epi8((char)0xFF);
            if (i + 16 > n) {
                fresh = _mm_cmpgt_epi8(lanes, _mm_set1_epi8((char)(i + 16 - n - 1)));
                i = n - 16;
            }
            __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
            // `"` `#` are 0x22-0x23 and `<` `=` `>` 0x3C-0x3E: each range one unsigned compare (x -
            // low below its width), made signed by flipping the top bit.
            __m128i quoteOrHash = _mm_cmplt_epi8(_mm_xor_si128(_mm_sub_epi8(v, _mm_set1_epi8(0x22)), top), _mm_set1_epi8((char)(-128 + 2)));
            __m128i angleOrEquals = _mm_cmplt_epi8(_mm_xor_si128(_mm_sub_epi8(v, _mm_set1_epi8(0x3C)), top), _mm_set1_epi8((char)(-128 + 3)));
            __m128i eq = _mm_cmpeq_epi8(v, _mm_set1_epi8('='));
            if (_mm_movemask_epi8(_mm_or_si128(quoteOrHash, _mm_andnot_si128(eq, angleOrEquals)))) return 0;
            equalsPerLane = _mm_sub_epi8(equalsPerLane, _mm_and_si128(eq, fresh));
            commasPerLane = _mm_sub_epi8(commasPerLane, _mm_and_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(',')), fresh));
            i += 16;
            if (++rounds == 255 || i >= n) {
                __m128i e = _mm_sad_epu8(equalsPerLane, _mm_setzero_si128()), c = _mm_sad_epu8(commasPerLane, _mm_setzero_si128());
                equals += _mm_cvtsi128_si32(e) + _mm_extract_epi16(e, 4);
                commas += _mm_cvtsi128_si32(c) + _mm_extract_epi16(c, 4);
                equalsPerLane = commasPerLane = _mm_setzero_si128();
                rounds = 0;
                if (i >= n) return equals == commas + 1;
            }
        }
    }
#endif
    for (intptr_t i = 0; i < n; i++) {
        switch (p[i]) {
        case '=': equals++; break;
        case ',': commas++; break;
        case '"': case '#': case '<': case '>': return 0;
        default: break;
        }
    }
    return equals == commas + 1;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/// One block: 32 letters validated and turned to their 6-bit values, then packed to 24 bytes
/// (four values a lane: maddubs makes two 12-bit pairs, madd the 24 bits, a shuffle puts them
/// big-end first, a permute joins the two halves). False, nothing written, when a byte is not
/// a letter of the alphabet.
__attribute__((target("avx2")))
static int decode_block(const uint8_t *from, uint8_t *to) {
    __m256i c = _mm256_loadu_si256((const __m256i *)from);
    // Signed compares: bytes of 0x80 and above are negative, in no range.
    __m256i upper = _mm256_and_si256(_mm256_cmpgt_epi8(c, _mm256_set1_epi8(0x40)), _mm256_cmpgt_epi8(_mm256_set1_epi8(0x5B), c));
    __m256i lower = _mm256_and_si256(_mm256_cmpgt_epi8(c, _mm256_set1_epi8(0x60)), _mm256_cmpgt_epi8(_mm256_set1_epi8(0x7B), c));
    __m256i digit = _mm256_and_si256(_mm256_cmpgt_epi8(c, _mm256_set1_epi8(0x2F)), _mm256_cmpgt_epi8(_mm256_set1_epi8(0x3A), c));
    __m256i plus = _mm256_cmpeq_epi8(c, _mm256_set1_epi8(0x2B));
    __m256i slash = _mm256_cmpeq_epi8(c, _mm256_set1_epi8(0x2F));
    __m256i valid = _mm256_or_si256(_mm256_or_si256(upper, lower), _mm256_or_si256(_mm256_or_si256(digit, plus), slash));
    if ((uint32_t)_mm256_movemask_epi8(valid) != 0xFFFFFFFFu) return 0;
    __m256i shift = _mm256_or_si256(
        _mm256_or_si256(_mm256_and_si256(upper, _mm256_set1_epi8(-65)), _mm256_and_si256(lower, _mm256_set1_epi8(-71))),
        _mm256_or_si256(_mm256_and_si256(digit, _mm256_set1_epi8(4)),
                        _mm256_or_si256(_mm256_and_si256(plus, _mm256_set1_epi8(19)), _mm256_and_si256(slash, _mm256_set1_epi8(16)))));
    __m256i v = _mm256_add_epi8(c, shift);
    __m256i pairs = _mm256_maddubs_epi16(v, _mm256_set1_epi32(0x01400140));
    __m256i words = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x00011000));
    __m256i bytes = _mm256_shuffle_epi8(words, _mm256_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1,
                                                                2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1));
    __m256i joined = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7));
    // 32 bytes stored, 24 of them the block's: the other 8 land on letters already read.
    _mm256_storeu_si256((__m256i *)to, joined);
    return 1;
}

void appconfig_base64_decode_blocks(uint8_t *text, intptr_t n, intptr_t *in, intptr_t *out) {
    if (!__builtin_cpu_supports("avx2")) return;
    intptr_t i = *in, o = *out;
    while (i + 32 <= n && decode_block(text + i, text + o)) {
        i += 32;
        o += 24;
    }
    *in = i;
    *out = o;
}
#else
void appconfig_base64_decode_blocks(uint8_t *text, intptr_t n, intptr_t *in, intptr_t *out) {
    (void)text; (void)n; (void)in; (void)out;
}
#endif

/// Whether the newline at `j` ends a blank line (nothing before it since the segment's start or
/// the previous newline, or only a CR) that no continued line follows: a segment ends after it.
static inline int ldif_segment_end(const uint8_t *b, intptr_t n, intptr_t j, intptr_t start) {
    int blank = j == start || b[j - 1] == '\n' || (b[j - 1] == '\r' && (j - 1 == start || b[j - 2] == '\n'));
    return blank && j + 1 < n && b[j + 1] != ' ';
}

intptr_t appconfig_ldif_segments(const uint8_t *b, intptr_t n, intptr_t at, intptr_t *ends, uint32_t *lines, intptr_t cap, intptr_t *stop) {
    intptr_t count = 0, start = at, i = at;
    uint32_t newlines = 0;  // in the current segment, before `i`
#define APPCONFIG_SEGMENT_AT(j) do { \
        ends[count] = (j) + 1; lines[count] = newlines; count++; start = (j) + 1; newlines = 0; \
    } while (0)
    // The first byte alone (its blank-line test may look at nothing before it).
    if (i < n) {
        if (b[i] == '\n') {
            newlines++;
            if (ldif_segment_end(b, n, i, start)) APPCONFIG_SEGMENT_AT(i);
        }
        i++;
    }
#if defined(__SSE2__)
    // Sixteen bytes at a time: a newline after a newline or a CR may end a blank line (checked
    // one by one); the others are counted. memchr per line was half the scan at 1M users.
    const __m128i lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
    while (i + 16 < n && count < cap) {
        __m128i here = _mm_loadu_si128((const __m128i *)(b + i)), before = _mm_loadu_si128((const __m128i *)(b + i - 1));
        uint32_t nl = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(here, lf));
        uint32_t candidates = nl & (uint32_t)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(before, lf), _mm_cmpeq_epi8(before, cr)));
        uint32_t counted = 0;  // the block's newlines already in an earlier segment
        while (candidates && count < cap) {
            int bit = __builtin_ctz(candidates);
            candidates &= candidates - 1;
            intptr_t j = i + bit;
            if (!ldif_segment_end(b, n, j, start)) continue;
            uint32_t upto = nl & (bit == 31 ? 0xFFFFFFFFu : ((2u << bit) - 1));
            newlines += (uint32_t)__builtin_popcount(upto & ~counted);
            counted = upto;
            ends[count] = j + 1; lines[count] = newlines; count++; start = j + 1; newlines = 0;
        }
        if (count >= cap) { i = start; goto done; }
        newlines += (uint32_t)__builtin_popcount(nl & ~counted);
        i += 16;
    }
#endif
    for (; i < n && count < cap; i++) {
        if (b[i] != '\n') continue;
        newlines++;
        if (ldif_segment_end(b, n, i, start)) APPCONFIG_SEGMENT_AT(i);
    }
    if (count >= cap) i = start;
#undef APPCONFIG_SEGMENT_AT
done:
    *stop = count < cap ? n : i;
    if (count < cap) lines[count] = newlines;  // the last segment's, when there is room
    return count;
}

/// The first quote, LF or CR at or after `p` (n when none).
static inline intptr_t next_record_stop(const uint8_t *b, intptr_t n, intptr_t p) {
#if defined(__SSE2__)
    while (p + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(b + p));
        uint32_t stops = (uint32_t)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                     _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')))));
        if (stops) return p + __builtin_ctz(stops);
        p += 16;
    }
#endif
    while (p < n && b[p] != '"' && b[p] != '\n' && b[p] != '\r') p++;
    return p;
}

intptr_t appconfig_csv_records(const uint8_t *b, intptr_t n, intptr_t p, uint8_t delimiter, intptr_t *ends, uint32_t *lines, intptr_t cap) {
    intptr_t count = 0;
    while (p < n && count < cap) {
        intptr_t newlines = 0;
        uint32_t high = 0;  // next_quote gathers it; not needed here
        // A field starts at `field`: the record's start, or just past a delimiter.
        intptr_t field = p;
        for (;;) {
            if (p < n && b[p] == '"' && p == field) {
                intptr_t q = p + 1;
                for (;;) {
                    q = next_quote(b, n, q, &newlines, &high);
                    if (q >= n) break;
                    if (q + 1 < n && b[q + 1] == '"') { q += 2; continue; }
                    break;
                }
                if (q >= n) { p = n; break; }  // never closed: the record runs to the end
                p = q + 1;
                if (p < n && b[p] != delimiter && b[p] != '\n' && b[p] != '\r') {
                    // Text after the closing quote: the scanner skips to the line's end.
                    const uint8_t *lf = memchr(b + p, '\n', (size_t)(n - p));
                    p = lf ? lf - b : n;
                }
            } else {
                // A plain field and the plain fields after it: a delimiter matters only where a
                // quote follows it (a quoted field), a quote only where a field starts.
                for (;;) {
                    p = next_record_stop(b, n, p);
                    if (p < n && b[p] == '"') {
                        if (b[p - 1] == delimiter) break;  // a quoted field (p > field here: see above)
                        p++;
                        continue;
                    }
                    break;
                }
                if (p < n && b[p] == '"') { field = p; continue; }
            }
            if (p >= n) break;
            uint8_t c = b[p++];
            if (c == delimiter) { field = p; continue; }
            if (c == '\r' && p < n && b[p] == '\n') p++;
            newlines++;
            break;
        }
        ends[count] = p;
        lines[count] = (uint32_t)newlines;
        count++;
    }
    return count;
}
