// A guard for files mapped into memory: a file cut shorter while it is mapped makes the kernel send
// SIGBUS to whoever reads a page past its new end, which would end the process. Pages of a guarded
// mapping that fault so are replaced by zero pages and counted instead; the mapping's owner asks
// for the count when it is done and refuses what it read (the file changed under it).
#ifndef CMAPPEDFILE_H
#define CMAPPEDFILE_H

#include <stddef.h>

/// Guards `length` bytes from `start` (a mapping); the SIGBUS handler is installed on the first
/// call, in front of whatever handler there was (which still gets every other SIGBUS). Returns the
/// guard's slot, or -1 when every slot is taken or the handler cannot be installed (then the
/// caller reads the file instead of mapping it).
int appconfig_map_guard_add(const void *start, size_t length);

/// How many pages of the guarded mapping were cut off (replaced by zeros) so far.
long appconfig_map_guard_faults(int slot);

/// Ends the guard (before the mapping is unmapped).
void appconfig_map_guard_remove(int slot);

/// Sets how much glibc's allocator grows a heap by at a time (`mallopt(M_TOP_PAD)`); nothing
/// elsewhere. Here, beside the mappings, as the one other setting of the process's memory.
void appconfig_heap_top_pad(int bytes);

/// Returns the allocator's free pages to the system (`malloc_trim(0)`); nothing elsewhere.
void appconfig_heap_trim(void);

#endif
