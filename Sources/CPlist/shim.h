#ifndef CPLIST_SHIM_H
#define CPLIST_SHIM_H
#include <plist/plist.h>
#endif
