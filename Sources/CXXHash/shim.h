#ifndef APPCONFIG_CXXHASH_SHIM_H
#define APPCONFIG_CXXHASH_SHIM_H
// Debian's libxxhash: XXH3-128, the inputs' fingerprints (a pass over each export that a night
// makes before it knows whether anything changed).
#include <xxhash.h>
#endif
