// Declarations only (include/FuzzDriver.h); the driver is in libFuzzer.
#include "FuzzDriver.h"
