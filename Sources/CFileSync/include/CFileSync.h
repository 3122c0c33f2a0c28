// syncfs(2), which glibc declares only under _GNU_SOURCE (Swift's Glibc module does not show it):
// flushes every file of one filesystem in one call, where fsync would take each of a generation's
// million files.
#ifndef CFILESYNC_H
#define CFILESYNC_H

/// Flushes the filesystem holding `fd` to its disk; 0, or -1 with errno.
int appconfig_syncfs(int fd);

/// Opens `path` to be written past the page cache (Linux's O_DIRECT, which Swift's Glibc module
/// does not show), unless its file system is tmpfs, whose pages are the file: the descriptor, or
/// -1 (also where there is no such thing).
int appconfig_open_direct(const char *path);

/// prctl(PR_SET_DUMPABLE, 0): no core dump, no ptrace by another process of the same user, while
/// the process holds secrets (Swift's Glibc module does not show prctl). 0, or -1 with errno.
int appconfig_set_nondumpable(void);

/// A pipe whose two ends close on exec (pipe2 with O_CLOEXEC, under _GNU_SOURCE). 0, or -1.
int appconfig_pipe_cloexec(int fds[2]);

/// copy_file_range(2) (glibc declares it under _GNU_SOURCE): up to `length` bytes of `in` from
/// `*in_offset` (advanced; `in`'s own offset untouched) to `out` at its offset, copied inside the
/// kernel. The bytes copied, or -1 with errno (ENOSYS, EXDEV, EINVAL where it cannot).
long long appconfig_copy_file_range(int in, long long *in_offset, int out, unsigned long length);

/// Starts writing `length` bytes of `fd` from `offset` (0: to the end) to the disk without waiting
/// (Linux's sync_file_range with SYNC_FILE_RANGE_WRITE): a file that is flushed later (fsync) is
/// then mostly on the disk by the time it is. A hint: 0, or -1 with errno where it cannot.
int appconfig_start_writeback(int fd, long long offset, long long length);

#endif
