// libFuzzer's driver, called from each target's main: SwiftPM gives an executable its own `main`,
// so libFuzzer's cannot be the one that runs.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*UserCb)(const uint8_t *Data, size_t Size));
