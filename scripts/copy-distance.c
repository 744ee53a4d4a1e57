/* copy-distance.c -- how fast memcpy and the kernel's cross-memory copy
 * (process_vm_writev within this process) run by where the destination lies
 * modulo a page from the source: on AMD Zen both copy with rep movsb, 15-25x
 * slower at 1-63 bytes past (docs/rep-movsb-trap.md; ramp avoids it:
 * src/sys/copy.rs, src/sys/cma.rs). Prints GB/s per distance, one line per
 * size and copy.
 *
 *   cc -O2 -o copy-distance scripts/copy-distance.c && ./copy-distance
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static const long PAST[] = {0, 8, 16, 24, 32, 40, 64, 256};
#define NPAST (sizeof PAST / sizeof PAST[0])

int main(void) {
  static const size_t SIZES[] = {4096, 65000, 65536};
  char *base = aligned_alloc(4096, 1 << 22);
  if (!base)
    return 1;
  memset(base, 1, 1 << 22);
  for (int kernel = 0; kernel < 2; kernel++) {
    for (size_t k = 0; k < sizeof SIZES / sizeof SIZES[0]; k++) {
      size_t s = SIZES[k];
      printf("%s %6zu:", kernel ? "process_vm_writev" : "memcpy           ", s);
      for (size_t i = 0; i < NPAST; i++) {
        char *src = base + (1 << 20), *dst = src + (1 << 20) + PAST[i];
        long n = (kernel ? (1L << 30) : (1L << 31)) / (long)s;
        struct iovec l = {src, s}, r = {dst, s};
        double t = now();
        for (long j = 0; j < n; j++) {
          if (kernel) {
            if (process_vm_writev(getpid(), &l, 1, &r, 1, 0) != (ssize_t)s) {
              perror("process_vm_writev");
              return 1;
            }
          } else {
            memcpy(dst, src, s);
            __asm__ volatile("" : : "r"(dst) : "memory");
          }
        }
        t = now() - t;
        printf(" %ld:%.1f", PAST[i], (double)n * s / t / 1e9);
      }
      printf(" GB/s\n");
    }
  }
  return 0;
}
