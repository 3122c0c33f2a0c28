#define _GNU_SOURCE
#include "CFileSync.h"
#include <unistd.h>

int appconfig_syncfs(int fd) { return syncfs(fd); }
