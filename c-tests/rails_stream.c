/* rails_stream: a two-rank SPMD job (under mpiexec, ramp-run or any launcher ramp
 * speaks to) that streams over whatever rails the job was given (RAMP_RAILS), for
 * tests/link_rails_langs.rs: rank 1 sends long requests (Xfers of 64 KiB, each carrying
 * its sequence number in its argument and its first 4 bytes) into rank 0's segment, one
 * slot per credit, until the file named by RAILS_STREAM_STOP exists; then a done request
 * with the count.  Rank 0 prints a progress line every 100 ms
 * ("rails_stream: progress delivered=BYTES unix_ms=MS"), counts every message by its
 * sequence number and checks its slot and first bytes; after the done request and every
 * message below its count (the done may overtake the last ones) it prints
 * "rails_stream: PASS ..." when each message ran exactly once and nothing came back, else
 * "rails_stream: FAIL ..." and the job exits 1.  Handler 0 counts returned messages on
 * both ranks (a failure).
 *
 * Built as a user builds against ramp: cc rails_stream.c -Iinclude -Ltarget/release -lramp.
 * Not a t_*.c: c-tests/run.sh does not run it (it needs a launcher and two rails).
 */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <am.h>
#include <ramp.h>
#include <ramp_spmd.h>

#define H_XFER 10
#define H_DONE 11
#define XFER 65536u
#define MAXSEQ (1u << 24)

static uint8_t *seen;    /* rank 0: runs per sequence number (saturating) */
static uint8_t *seg;     /* rank 0: the segment, depth slots of XFER bytes */
static uint32_t depth;   /* credits per peer: the slots */
static uint64_t damaged; /* rank 0: messages not whole or not in their slot */
static uint64_t returned;
static uint64_t delivered; /* rank 0: bytes of messages handled */
static uint64_t distinct;  /* rank 0: sequence numbers seen */
static int done;
static uint64_t done_n;

static uint64_t unix_ms(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (uint64_t)tv.tv_sec * 1000u + (uint64_t)tv.tv_usec / 1000u;
}

static void h_returned(int status, op_t opcode, void *token) {
  (void)token;
  fprintf(stderr, "rails_stream: a message came back: status %d opcode %d\n", status, (int)opcode);
  returned++;
}

static void h_xfer(void *token, void *buf, size_t n, int32_t a0) {
  (void)token;
  uint32_t q = (uint32_t)a0, head;
  if (n != XFER || q >= MAXSEQ || (uint8_t *)buf != seg + (size_t)(q % depth) * XFER) {
    damaged++;
    return;
  }
  memcpy(&head, buf, 4);
  if (head != q) {
    damaged++;
    return;
  }
  if (seen[q] == 0) distinct++;
  if (seen[q] < 255) seen[q]++;
  delivered += n;
}

static void h_done(void *token, int32_t hi, int32_t lo) {
  (void)token;
  done_n = (uint64_t)(uint32_t)hi << 32 | (uint32_t)lo;
  done = 1;
}

#define OK(call)                                                          \
  do {                                                                    \
    int rc_ = (call);                                                     \
    if (rc_ != AM_OK) {                                                   \
      fprintf(stderr, "rails_stream: %s: error %d\n", #call, rc_);        \
      ramp_SPMDExit(1);                                                   \
    }                                                                     \
  } while (0)

static int receive(eb_t eb) {
  uint64_t next = unix_ms() + 100;
  /* the done request may overtake the last Xfers (another path): until it came and
   * every number below its count was seen (a message lost hangs here: the caller's
   * watchdog tells) */
  while (!done || distinct < done_n) {
    OK(AM_Poll(eb));
    uint64_t now = unix_ms();
    if (now >= next) {
      printf("rails_stream: progress delivered=%llu unix_ms=%llu\n",
             (unsigned long long)delivered, (unsigned long long)now);
      fflush(stdout);
      next = now + 100;
    }
    usleep(200);
  }
  uint64_t once = 0, more = 0, beyond = 0;
  for (uint64_t q = 0; q < MAXSEQ; q++) {
    if (q < done_n && seen[q] == 1) once++;
    if (seen[q] > 1) more++;
    if (q >= done_n && seen[q]) beyond++;
  }
  int ok = once == done_n && more == 0 && beyond == 0 && damaged == 0 && returned == 0;
  printf("rails_stream: %s: %llu messages of %u bytes sent, %llu handled once, %llu more than "
         "once, %llu never sent, %llu damaged, %llu returned\n",
         ok ? "PASS" : "FAIL", (unsigned long long)done_n, XFER, (unsigned long long)once,
         (unsigned long long)more, (unsigned long long)beyond, (unsigned long long)damaged,
         (unsigned long long)returned);
  fflush(stdout);
  return ok;
}

static int send_all(eb_t eb, ep_t ep, const char *stop) {
  uint8_t *payload = calloc(1, XFER);
  if (!payload) return 0;
  uint64_t q = 0, checked = 0;
  struct stat st;
  for (;;) {
    if (q - checked >= 16) { /* look for the stop file every 16 messages */
      checked = q;
      if (stat(stop, &st) == 0) break;
    }
    uint32_t v = (uint32_t)q;
    memcpy(payload, &v, 4);
    OK(AM_RequestXfer1(ep, 0, (uintptr_t)(q % depth) * XFER, H_XFER, payload, XFER, (int32_t)v));
    q++;
    if (q >= MAXSEQ) break;
  }
  OK(AM_Request2(ep, 0, H_DONE, (int32_t)(q >> 32), (int32_t)(uint32_t)q));
  printf("rails_stream: rank 1 sent %llu messages\n", (unsigned long long)q);
  fflush(stdout);
  (void)eb;
  free(payload);
  return returned == 0;
}

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  /* 64 credits per peer: 64 slots, a slot written again only after its handler ran */
  OK(ramp_SPMDStartup(&argc, &argv, 0, 64, NULL, NULL, &eb, &ep));
  const char *stop = getenv("RAILS_STREAM_STOP");
  if (ramp_SPMDNumProcs() != 2 || !stop) {
    fprintf(stderr, "rails_stream: a job of 2 ranks with RAILS_STREAM_STOP set\n");
    ramp_SPMDExit(2);
  }
  int rank = ramp_SPMDMyProc();
  depth = 64;
  seg = calloc(depth, XFER);
  seen = calloc(MAXSEQ, 1);
  if (!seg || !seen) ramp_SPMDExit(2);
  OK(AM_SetSeg(ep, seg, (uintptr_t)depth * XFER));
  OK(AM_SetHandler(ep, 0, h_returned));
  OK(AM_SetHandler(ep, H_XFER, h_xfer));
  OK(AM_SetHandler(ep, H_DONE, h_done));
  OK(ramp_SPMDBarrier());
  int ok = rank == 0 ? receive(eb) : send_all(eb, ep, stop);
  OK(ramp_SPMDBarrier());
  ramp_SPMDExit(ok ? 0 : 1);
  return 1;
}
