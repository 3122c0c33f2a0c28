// Most functions are static inline in include/CByteScan.h: inlined where Swift calls them.
#include "CByteScan.h"

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
