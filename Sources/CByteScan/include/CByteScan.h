// Sixteen bytes compared at once for the CSV scanner, the one loop every byte of an inventory goes
// through (SSE2, every x86-64, where the compiler has it, else the same bits byte by byte), and
// a prefetch hint for the loops that read rows scattered in memory.
#ifndef CBYTESCAN_H
#define CBYTESCAN_H

#include <stdint.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/// The 16 bytes at `p`: bit i of the low half set when byte i is `delimiter`, LF or CR (what ends
/// an unquoted field), bit 16 + i when byte i is 0x80 or above (text to check as UTF-8).
static inline uint32_t appconfig_csv_stops16(const uint8_t *p, uint8_t delimiter) {
#if defined(__SSE2__)
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    __m128i stops = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8((char)delimiter)),
                                              _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
                                 _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')));
    return (uint32_t)_mm_movemask_epi8(stops) | ((uint32_t)_mm_movemask_epi8(v) << 16);
#else
    uint32_t bits = 0;
    for (int i = 0; i < 16; i++) {
        uint8_t c = p[i];
        if (c == delimiter || c == '\n' || c == '\r') bits |= 1u << i;
        if (c >= 0x80) bits |= 1u << (16 + i);
    }
    return bits;
#endif
}

/// One CSV record from `b + p` (of `n` bytes), when it is well formed: its fields as (offset,
/// length) pairs into `fields` (at most `capacity` of them; a quoted field's offset is past its
/// opening quote, and its length `-raw - 1` when it holds doubled quotes), into `count`; the lines
/// it ends (`lines`: newlines inside quotes, and its own end unless the input ends), and whether
/// any byte is 0x80 or above (`high`: to check as UTF-8). Returns where the next record starts, or
/// -1 when the record needs the careful scanner (`CSVScanner.next`): a quote never closed, text
/// after a closing quote, more fields than `capacity`. Written in C, as the one loop every byte of
/// an inventory goes through: Swift's scanner took several times the instructions per field.
intptr_t appconfig_csv_record(const uint8_t *b, intptr_t n, intptr_t p, uint8_t delimiter,
                             intptr_t *fields, intptr_t capacity, intptr_t *count, intptr_t *lines, int32_t *high);

/// Whether a DN that `DistinguishedName.plainCommonNameAndUnit` read (type=value pairs split by
/// `,`, no escapes, no `+` or `;`) is also plain for `GroupBuilder.isPlain`: one `=` per RDN (none
/// in a value) and no `"`, `#`, `<` or `>` anywhere. Sixteen bytes at a time: a byte loop over
/// classes cost much of reading every user of a directory whose groups are read.
int appconfig_dn_counts_plain(const uint8_t *p, intptr_t n);

/// Where the first byte of `p[0..<n]` that can end or escape a JSON string is (a quote, a
/// backslash, a byte below 0x20), or n. Sixteen bytes at a time (SSE2): a webhook event's
/// raw_payload is a 1.7 KB string, eight bytes at a time a tenth of a status run's parse.
static inline intptr_t appconfig_json_string_stop(const uint8_t *p, intptr_t n) {
    intptr_t i = 0;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), control = _mm_set1_epi8(0x1F);
    while (i + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                    _mm_cmpeq_epi8(_mm_max_epu8(v, control), control));
        uint32_t bits = (uint32_t)_mm_movemask_epi8(stop);
        if (bits) return i + __builtin_ctz(bits);
        i += 16;
    }
#endif
    while (i < n && p[i] != '"' && p[i] != '\\' && p[i] >= 0x20) i++;
    return i;
}

/// Decodes base64 in place, 32 letters of the alphabet to 24 bytes at a time, from letter `*in`
/// to byte `*out` (out <= in), while whole blocks of the alphabet remain (AVX2, where the CPU
/// has it; else nothing). Stops before a block holding anything else (padding, white space, a
/// wrong byte) and leaves the rest, with `*in` and `*out` where it stopped, to the byte loop.
/// Written in C because the benchmark says so: the two decodes per webhook event were a fifth
/// of a status run's parse.
void appconfig_base64_decode_blocks(uint8_t *text, intptr_t n, intptr_t *in, intptr_t *out);

/// Asks the CPU to bring the cache line at `p` in for reading, without waiting for it: reads
/// at rows scattered over hundreds of megabytes (rows in device-key order) are cache and TLB
/// misses that a loop can start a few rows ahead of their use.
static inline void appconfig_prefetch(const void *p) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(p, 0, 3);
#endif
}

/// The records of LDIF bytes as a night compares them: from `at`, the ends of up to `cap`
/// segments (each just past a blank line's newline that no continued line, one starting with a
/// space, follows; LF or CRLF) into `ends`, and the newlines in each into `lines`. Returns how
/// many it wrote; `*stop` is where it stopped (`n` once the bytes are done: the bytes after the
/// last end are the last segment, which the caller ends at `n`). In C for memchr's speed over
/// an export of hundreds of megabytes.
intptr_t appconfig_ldif_segments(const uint8_t *b, intptr_t n, intptr_t at, intptr_t *ends, uint32_t *lines, intptr_t cap, intptr_t *stop);

/// The records of a CSV file from `b + p` (a record's start), as `CSVScanner.next` splits them:
/// the quoted fields (a quote where a field starts, doubled quotes inside), a CR, LF or CRLF
/// ending the record, a quote never closed running to the end, text after a closing quote
/// skipped to the line's end. Per record (at most `cap`), where the next starts (`ends`) and the
/// lines it ends (`lines`: newlines inside quotes, and its own end unless the input ends).
/// Returns how many. Nothing is read into fields: a night finds its inventory's records this way
/// to hash them (`CSVRecords`), at several times the parse's speed (a quote, LF or CR sixteen
/// bytes at a time; a delimiter looked at only before a quote).
intptr_t appconfig_csv_records(const uint8_t *b, intptr_t n, intptr_t p, uint8_t delimiter, intptr_t *ends, uint32_t *lines, intptr_t cap);

#endif
