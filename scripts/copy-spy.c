/* copy-spy.c -- an LD_PRELOAD library that counts, by call site, the memcpy
 * calls of more than 2048 bytes whose destination lies 1-63 bytes past a page
 * from the source: where glibc's rep movsb runs 15-25x slower on AMD's Zen
 * cores (glibc bug 30994; ramp copies such pairs in pieces: src/sys/copy.rs).
 * Each process prints its table to stderr at exit and every 100,000 such
 * copies: "copy-spy: pid P: OBJECT+OFFSET slow S (B bytes) of N", the offset
 * for addr2line -f -C -i -e OBJECT. Copies are made by memmove (not counted).
 *
 *   cc -O2 -shared -fPIC -o copy-spy.so scripts/copy-spy.c -ldl
 *   LD_PRELOAD=./copy-spy.so PROGRAM ...      (scripts/copy-spy.sh does both)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SITES 64
#define LONG 2048

static void *site[SITES];
static unsigned long slow[SITES], slow_bytes[SITES], seen[SITES];
static unsigned long counted;

static void report(void) {
  for (int i = 0; i < SITES && site[i]; i++) {
    Dl_info d;
    const char *obj = "?";
    uintptr_t off = (uintptr_t)site[i];
    if (dladdr(site[i], &d) && d.dli_fname) {
      obj = d.dli_fname;
      off -= (uintptr_t)d.dli_fbase;
    }
    fprintf(stderr, "copy-spy: pid %d: %s+0x%lx slow %lu (%lu bytes) of %lu\n", (int)getpid(),
            obj, (unsigned long)off, slow[i], slow_bytes[i], seen[i]);
  }
}

__attribute__((destructor)) static void at_exit_report(void) { report(); }

static void count(void *caller, size_t n, int is_slow) {
  for (int i = 0; i < SITES; i++) {
    if (site[i] == caller || !site[i]) {
      site[i] = caller;
      seen[i]++;
      if (is_slow) {
        slow[i]++;
        slow_bytes[i] += n;
      }
      return;
    }
  }
}

void *memcpy(void *dst, const void *src, size_t n) {
  if (n > LONG) {
    uintptr_t past = ((uintptr_t)dst - (uintptr_t)src) & 4095;
    count(__builtin_return_address(0), n, past != 0 && past < 64);
    if (++counted % 100000 == 0)
      report();
  }
  return memmove(dst, src, n);
}
