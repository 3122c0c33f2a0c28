#ifndef CPCRE2_SHIM_H
#define CPCRE2_SHIM_H
// The 8-bit library only: patterns and subjects are UTF-8 bytes.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

// PCRE2_ZERO_TERMINATED is a cast expression Swift cannot import; we always pass lengths anyway,
// but the "unset" offset is needed to read ovectors.
static inline PCRE2_SIZE cpcre2_unset(void) { return PCRE2_UNSET; }
#endif
