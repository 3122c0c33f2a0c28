#define _GNU_SOURCE
#include "CFileSync.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/vfs.h>
#include <sys/prctl.h>
#include <linux/magic.h>
#endif

int appconfig_syncfs(int fd) { return syncfs(fd); }

long long appconfig_copy_file_range(int in, long long *in_offset, int out, unsigned long length) {
#if defined(__linux__)
    off64_t offset = *in_offset;
    ssize_t n = copy_file_range(in, &offset, out, NULL, length, 0);
    *in_offset = offset;
    return n;
#else
    errno = ENOSYS;
    return -1;
#endif
}

int appconfig_start_writeback(int fd, long long offset, long long length) {
#if defined(__linux__)
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd; (void)offset; (void)length;
    errno = ENOSYS;
    return -1;
#endif
}

int appconfig_set_nondumpable(void) {
#if defined(__linux__)
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
#else
    return 0;
#endif
}

int appconfig_pipe_cloexec(int fds[2]) {
#if defined(__linux__)
    return pipe2(fds, O_CLOEXEC);
#else
    return pipe(fds);
#endif
}

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
