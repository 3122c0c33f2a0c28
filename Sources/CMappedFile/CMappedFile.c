// The SIGBUS guard of mapped files (see CMappedFile.h). The handler does only what is safe in a
// signal handler: atomic loads and stores, and one mmap call (a system call; Linux makes no
// promise about it in POSIX's list, but it takes no lock of the C library).
#define _GNU_SOURCE
#include "CMappedFile.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SLOTS 64

struct guard {
    atomic_int used;       // 0 free, 1 taken (being set), 2 guarding
    atomic_uintptr_t start, end;
    atomic_long faults;
};

static struct guard guards[SLOTS];
static struct sigaction previous;
static uintptr_t page_size;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int installed;

static void on_sigbus(int signal, siginfo_t *info, void *context) {
    uintptr_t address = (uintptr_t)info->si_addr;
    for (int i = 0; i < SLOTS; i++) {
        if (atomic_load_explicit(&guards[i].used, memory_order_acquire) != 2) continue;
        if (address < atomic_load_explicit(&guards[i].start, memory_order_relaxed)
            || address >= atomic_load_explicit(&guards[i].end, memory_order_relaxed)) continue;
        void *page = (void *)(address & ~(page_size - 1));
        if (mmap(page, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
            atomic_fetch_add_explicit(&guards[i].faults, 1, memory_order_relaxed);
            return;  // the read runs again, on zeros
        }
        break;
    }
    // Not a guarded page: what would have happened without the guard.
    if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction) {
        previous.sa_sigaction(signal, info, context);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(signal);
    } else {
        // Back to the default action: returning runs the faulting access again, which now ends the process.
        struct sigaction fallback;
        memset(&fallback, 0, sizeof fallback);
        fallback.sa_handler = SIG_DFL;
        sigaction(SIGBUS, &fallback, NULL);
    }
}

static void install(void) {
    page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    installed = sigaction(SIGBUS, &action, &previous) == 0;
}

int appconfig_map_guard_add(const void *start, size_t length) {
    pthread_once(&once, install);
    if (!installed) return -1;
    for (int i = 0; i < SLOTS; i++) {
        int expected = 0;
        if (!atomic_compare_exchange_strong(&guards[i].used, &expected, 1)) continue;
        atomic_store_explicit(&guards[i].start, (uintptr_t)start, memory_order_relaxed);
        atomic_store_explicit(&guards[i].end, (uintptr_t)start + length, memory_order_relaxed);
        atomic_store_explicit(&guards[i].faults, 0, memory_order_relaxed);
        atomic_store_explicit(&guards[i].used, 2, memory_order_release);
        return i;
    }
    return -1;
}

long appconfig_map_guard_faults(int slot) {
    return atomic_load_explicit(&guards[slot].faults, memory_order_relaxed);
}

void appconfig_map_guard_remove(int slot) {
    atomic_store_explicit(&guards[slot].used, 0, memory_order_release);
}

#if defined(__GLIBC__)
#include <malloc.h>
void appconfig_heap_top_pad(int bytes) { mallopt(M_TOP_PAD, bytes); }
void appconfig_heap_trim(void) { malloc_trim(0); }
#else
void appconfig_heap_top_pad(int bytes) { (void)bytes; }
void appconfig_heap_trim(void) {}
#endif
