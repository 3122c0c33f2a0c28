#define _GNU_SOURCE
#include "CFileSync.h"
#include <fcntl.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/vfs.h>
#include <linux/magic.h>
#endif

int appconfig_syncfs(int fd) { return syncfs(fd); }

int appconfig_open_direct(const char *path) {
#if defined(__linux__)
    struct statfs info;
    if (statfs(path, &info) != 0 || info.f_type == TMPFS_MAGIC) return -1;
    return open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
#else
    (void)path;
    return -1;
#endif
}
