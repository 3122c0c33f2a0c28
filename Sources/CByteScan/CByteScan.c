// The functions are static inline in include/CByteScan.h: inlined where Swift calls them.
#include "CByteScan.h"
