/* vclock.c: an LD_PRELOAD shim for the callgrind scripts (am-cost-callgrind.sh,
 * py-callgrind.sh): the monotonic clocks become a counter that moves 200 ns per
 * read, so what depends on time happens the same way in every run, however
 * slowly valgrind runs; every other clock is the real one. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>
static unsigned long long vt = 1000000000ULL;
int clock_gettime(clockid_t c, struct timespec *ts) {
    static int (*real)(clockid_t, struct timespec *);
    if (c == CLOCK_MONOTONIC || c == CLOCK_MONOTONIC_RAW || c == CLOCK_BOOTTIME ||
        c == CLOCK_MONOTONIC_COARSE) {
        vt += 200;
        ts->tv_sec = vt / 1000000000ULL;
        ts->tv_nsec = vt % 1000000000ULL;
        return 0;
    }
    if (!real)
        real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    return real(c, ts);
}
