/* t_rma: one-sided remote memory from C (ramp.h, "Remote memory"), two processes.
 *
 * Rank 1 is the target: it registers regions (read-write, read-only, write-only, one
 * in mmap'ed memory it unmaps after deregistering it) and its AM-2 segment is region
 * 0. Rank 0 puts and gets into them: sizes 1 B, 64 KiB, 1 MiB, 5 MiB (more than
 * AM_MaxLong); refusals at the target (out of bounds, unknown region, no access right)
 * reported as EBADSEGOFF with nothing written; argument errors (AM_ERR_BAD_ARG,
 * out-parameters untouched); ramp_PutNotify + ramp_WaitFlag; ramp_Fence's result;
 * ordering (a put, then an AM request whose handler checks the bytes, without
 * waiting); a deregistration (and munmap) between operations in flight; 1,000
 * outstanding operations completed with ramp_Test; and the progress thread: the
 * target spins in pure computation, calling nothing of ramp, while 1,000 puts and
 * gets complete, and the AM request sent meanwhile runs only in its own poll.
 */
#include "common.h"

#include <sys/mman.h>

#define RWLEN (6u << 20)
#define SMALL 4096
#define MAPLEN (2u << 20)
#define SEGLEN 8192
#define H_CHECK 40
#define H_DEREG 41
#define H_MARK 42
#define ORDER_ROUNDS 20 /* x (260 KiB + 64) fits in RWLEN */

static pair_t P;
static uint8_t *rw, *ro, *wo;
static uint8_t *mapped;
static uint8_t seg[SEGLEN];
static int check_ok, check_bad, dereg_ran, mark_ran;

typedef struct { ramp_region_t rw, ro, wo, map; } regions_t;
static regions_t R;

static uint8_t pat(size_t i, unsigned salt) { return (uint8_t)(i * 131u + salt + (i >> 9)); }
static void fill(uint8_t *b, size_t n, unsigned salt) {
  for (size_t i = 0; i < n; i++) b[i] = pat(i, salt);
}
static int same(const uint8_t *b, size_t n, unsigned salt) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != pat(i, salt)) return 0;
  return 1;
}
static int all_zero(const uint8_t *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (b[i]) return 0;
  return 1;
}

/* The bytes [off, off+len) of rw must all be `v` (sent right after their put). */
static void h_check(void *token, int32_t off, int32_t len, int32_t v) {
  (void)token;
  int ok = 1;
  for (int32_t i = 0; i < len; i++)
    if (rw[off + i] != (uint8_t)v) ok = 0;
  if (ok) check_ok++;
  else check_bad++;
}
/* Deregisters the mmap'ed region and unmaps its memory: a later put must not touch it. */
static void h_dereg(void *token) {
  (void)token;
  AM_SAFE(ramp_DeregisterRegion(P.ep, R.map));
  CHECK(munmap(mapped, MAPLEN) == 0, "munmap: %s", strerror(errno));
  mapped = NULL;
  dereg_ran++;
}
static void h_mark(void *token) {
  (void)token;
  mark_ran++;
}

static void setup(pair_t *p, void *arg) {
  (void)arg;
  AM_SAFE(AM_SetHandler(p->ep, H_CHECK, h_check));
  AM_SAFE(AM_SetHandler(p->ep, H_DEREG, h_dereg));
  AM_SAFE(AM_SetHandler(p->ep, H_MARK, h_mark));
  AM_SAFE(AM_SetSeg(p->ep, seg, SEGLEN));
}

static int wait_op(ramp_op_t op) {
  int status = -1;
  AM_SAFE(ramp_Wait(P.ep, op, &status));
  return status;
}

static void bad_args(void) {
  PHASE("argument errors");
  ramp_op_t op = 777;
  ramp_region_t reg = 555;
  int done = 9, status = 9;
  uint8_t b[16] = {0};
  EXPECT_RC(ramp_Put(NULL, 1, R.rw, 0, b, 1, &op), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_Put(P.ep, 1, R.rw, 0, NULL, 1, &op), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_Put(P.ep, 7, R.rw, 0, b, 1, &op), AM_ERR_BAD_ARG);            /* unmapped */
  EXPECT_RC(ramp_Put(P.ep, 1, R.rw, UINT64_MAX, b, 2, &op), AM_ERR_BAD_ARG);  /* overflow */
  EXPECT_RC(ramp_PutNotify(P.ep, 1, R.rw, 0, b, 1, UINT64_MAX - 1, 1, &op), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_Get(P.ep, 1, R.rw, 0, NULL, 4, &op), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_Get(P.ep, 9, R.rw, 0, b, 4, &op), AM_ERR_BAD_ARG);
  CHECK(op == 777, "a failed call wrote its handle (%" PRIu64 ")", (uint64_t)op);
  EXPECT_RC(ramp_Test(P.ep, 12345, &done, &status), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_Wait(P.ep, 0, &status), AM_ERR_BAD_ARG);
  CHECK(done == 9 && status == 9, "a failed ramp_Test wrote its out-parameters");
  AM_SAFE(ramp_Put(P.ep, 1, R.rw, 0, b, 1, &op));
  EXPECT_RC(ramp_Test(P.ep, op, NULL, &status), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_Wait(P.ep, op, NULL), AM_ERR_BAD_ARG);
  CHECK(wait_op(op) == 0, "put failed");
  EXPECT_RC(ramp_Wait(P.ep, op, &status), AM_ERR_BAD_ARG); /* released */
  EXPECT_RC(ramp_RegisterRegion(P.ep, NULL, 10, RAMP_REGION_READ, &reg), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_RegisterRegion(P.ep, b, 0, RAMP_REGION_READ, &reg), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_RegisterRegion(P.ep, b, 16, 0, &reg), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_RegisterRegion(P.ep, b, 16, 4, &reg), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_RegisterRegion(P.ep, b, 16, RAMP_REGION_READ, NULL), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_RegisterRegion(NULL, b, 16, RAMP_REGION_READ, &reg), AM_ERR_BAD_ARG);
  /* memory that wraps around the address space: refused, never touched */
  EXPECT_RC(ramp_RegisterRegion(P.ep, (void *)(UINTPTR_MAX - 7), 16, RAMP_REGION_READ, &reg), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_Get(P.ep, 1, R.rw, 0, (void *)(UINTPTR_MAX - 3), 8, &op), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_Put(P.ep, 1, R.rw, 0, (void *)(UINTPTR_MAX - 3), 8, &op), AM_ERR_BAD_ARG);
  CHECK(reg == 555, "a failed registration wrote its id");
  void *base = (void *)&op;
  EXPECT_RC(ramp_AllocRegion(NULL, 4096, RAMP_REGION_READ, &base, &reg), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_AllocRegion(P.ep, 0, RAMP_REGION_READ, &base, &reg), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_AllocRegion(P.ep, (size_t)1 << 41, RAMP_REGION_READ, &base, &reg), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_AllocRegion(P.ep, SIZE_MAX, RAMP_REGION_READ, &base, &reg), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_AllocRegion(P.ep, 4096, 0, &base, &reg), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_AllocRegion(P.ep, 4096, 4, &base, &reg), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_AllocRegion(P.ep, 4096, RAMP_REGION_READ, NULL, &reg), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_AllocRegion(P.ep, 4096, RAMP_REGION_READ, &base, NULL), AM_ERR_BAD_ARG);
  CHECK(reg == 555 && base == (void *)&op, "a failed allocation wrote its outputs");
  {
    /* one that works: zeroed, page-rounded, usable, freed by deregistration */
    uint8_t *m = NULL;
    AM_SAFE(ramp_AllocRegion(P.ep, 5000, RAMP_REGION_READ | RAMP_REGION_WRITE, (void **)&m, &reg));
    CHECK(m != NULL && reg != 0 && all_zero(m, 8192), "a fresh region is not zeroed");
    memset(m, 7, 8192);
    AM_SAFE(ramp_DeregisterRegion(P.ep, reg));
    EXPECT_RC(ramp_DeregisterRegion(P.ep, reg), AM_ERR_BAD_ARG);
    reg = 555;
  }
  {
    /* ramp_AllocSegment: argument checks, then one that works (zeroed,
     * page-rounded, the segment AM_GetSeg returns), replaced by the old one */
    void *old, *got;
    uintptr_t oldlen, gotlen;
    AM_SAFE(AM_GetSeg(P.ep, &old, &oldlen));
    EXPECT_RC(ramp_AllocSegment(NULL, 4096, &base), AM_ERR_BAD_ARG);
    EXPECT_RC(ramp_AllocSegment(P.ep, 0, &base), AM_ERR_BAD_ARG);
    EXPECT_RC(ramp_AllocSegment(P.ep, (uintptr_t)1 << 41, &base), AM_ERR_BAD_ARG);
    EXPECT_RC(ramp_AllocSegment(P.ep, UINTPTR_MAX, &base), AM_ERR_BAD_ARG);
    EXPECT_RC(ramp_AllocSegment(P.ep, 4096, NULL), AM_ERR_BAD_ARG);
    CHECK(base == (void *)&op, "a failed segment allocation wrote its output");
    AM_SAFE(AM_GetSeg(P.ep, &got, &gotlen));
    CHECK(got == old && gotlen == oldlen, "a failed segment allocation changed the segment");
    uint8_t *m = NULL;
    AM_SAFE(ramp_AllocSegment(P.ep, 5000, (void **)&m));
    AM_SAFE(AM_GetSeg(P.ep, &got, &gotlen));
    CHECK(m != NULL && got == (void *)m && gotlen == 8192 && all_zero(m, 8192),
          "the allocated segment is not the segment, or not zeroed");
    memset(m, 7, 8192);
    AM_SAFE(AM_SetSeg(P.ep, old, oldlen)); /* frees m */
  }
  EXPECT_RC(ramp_DeregisterRegion(P.ep, RAMP_SEGMENT), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_DeregisterRegion(P.ep, 999999), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_WaitFlag(P.ep, NULL, 1), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_WaitFlag(P.ep, (const volatile uint32_t *)(b + 1), 1), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_SetProgressThread(NULL, 1), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_Fence(NULL), AM_ERR_BAD_ARG);
}

static void sizes(uint8_t *buf, uint8_t *back) {
  static const size_t n[4] = {1, 64u << 10, 1u << 20, 5u << 20};
  for (int k = 0; k < 4; k++) {
    PHASE("put and get of every size");
    uint64_t off = 3 + 7 * (uint64_t)k;
    fill(buf, n[k], 10 + k);
    ramp_op_t op = 0;
    AM_SAFE(ramp_Put(P.ep, 1, R.rw, off, buf, n[k], &op));
    CHECK(op != 0, "handle 0");
    memset(buf, 0, n[k]); /* the source may be reused at once */
    int s = wait_op(op);
    CHECK(s == 0, "put of %zu bytes: %s", n[k], ct_statusname(s));
    memset(back, 0, n[k]);
    AM_SAFE(ramp_Get(P.ep, 1, R.rw, off, back, n[k], &op));
    s = wait_op(op);
    CHECK(s == 0, "get of %zu bytes: %s", n[k], ct_statusname(s));
    CHECK(same(back, n[k], 10 + k), "get of %zu bytes brought other bytes", n[k]);
  }
  /* the last one, at offset 0, is what rank 1 checks */
  fill(buf, 5u << 20, 99);
  AM_SAFE(ramp_Put(P.ep, 1, R.rw, 0, buf, 5u << 20, NULL));
  AM_SAFE(ramp_Fence(P.ep));
  /* region 0: the segment */
  fill(buf, SEGLEN, 5);
  ramp_op_t op;
  AM_SAFE(ramp_Put(P.ep, 1, RAMP_SEGMENT, 0, buf, SEGLEN, &op));
  CHECK(wait_op(op) == 0, "put into the segment failed");
}

static void refusals(uint8_t *back) {
  PHASE("refusals at the target");
  uint8_t b[256];
  memset(b, 0xee, sizeof b);
  struct { ramp_region_t r; uint64_t off; size_t n; int get_ok; } c[] = {
      {R.rw, RWLEN - 100, 200, 0},          /* ends past the region */
      {R.rw, RWLEN, 1, 0},                  /* starts at its end */
      {R.rw, UINT64_MAX - 300, 200, 0},     /* far out */
      {999, 0, 10, 0},                      /* no such region */
      {R.ro, 0, 10, 1},                     /* read-only: put refused, get fine */
      {R.wo, 0, 10, 0},                     /* write-only: get refused (put is fine) */
      {R.ro, SMALL - 4, 8, 0},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    ramp_op_t op;
    int s;
    if (c[i].r != R.wo) {
      AM_SAFE(ramp_Put(P.ep, 1, c[i].r, c[i].off, b, c[i].n, &op));
      s = wait_op(op);
      CHECK(s == EBADSEGOFF, "case %zu: put returned %s, expected EBADSEGOFF", i, ct_statusname(s));
    }
    memset(back, 0x11, c[i].n);
    AM_SAFE(ramp_Get(P.ep, 1, c[i].r, c[i].off, back, c[i].n, &op));
    s = wait_op(op);
    CHECK(s == (c[i].get_ok ? 0 : EBADSEGOFF), "case %zu: get returned %s", i, ct_statusname(s));
    if (!c[i].get_ok)
      for (size_t k = 0; k < c[i].n; k++) CHECK(back[k] == 0x11, "case %zu: a refused get wrote dst", i);
  }
}

static void notify_and_fence(uint8_t *buf) {
  PHASE("fence");
  uint8_t b[64] = {1};
  for (int i = 0; i < 10; i++) AM_SAFE(ramp_Put(P.ep, 1, R.rw, RWLEN - 64 - 64 * (uint64_t)i, b, 64, NULL));
  AM_SAFE(ramp_Fence(P.ep));
  AM_SAFE(ramp_Put(P.ep, 1, R.rw, 0, b, 1, NULL));
  AM_SAFE(ramp_Put(P.ep, 1, R.ro, 0, b, 1, NULL)); /* refused */
  AM_SAFE(ramp_Put(P.ep, 1, R.rw, 1, b, 1, NULL));
  EXPECT_RC(ramp_Fence(P.ep), AM_ERR_RESOURCE);
  AM_SAFE(ramp_Fence(P.ep)); /* reported once */
  PHASE("put with notification");
  fill(buf, 1u << 20, 33);
  /* the flag sits right after the bytes, in the same region */
  AM_SAFE(ramp_PutNotify(P.ep, 1, R.rw, 4096, buf, 1u << 20, 4096 + (1u << 20), 0xc0ffee, NULL));
  AM_SAFE(ramp_Fence(P.ep));
}

static void ordering(void) {
  PHASE("ordering: put, then tell");
  static uint8_t b[260 << 10]; /* two chunks */
  for (int i = 0; i < ORDER_ROUNDS; i++) {
    int32_t len = (i % 4 == 0) ? (int32_t)sizeof b : 500 + i;
    int32_t off = i * (int32_t)(sizeof b + 64);
    memset(b, i + 1, (size_t)len);
    AM_SAFE(ramp_Put(P.ep, 1, R.rw, (uint64_t)off, b, (size_t)len, NULL));
    AM_SAFE(AM_Request3(P.ep, 1, H_CHECK, off, len, i + 1));
  }
  AM_SAFE(ramp_Fence(P.ep));
}

/* Rank 0: eight operations, then the AM request that deregisters (and unmaps) the
 * region, then eight more right behind it. The first eight are performed before the
 * handler runs (the ordering promise): they succeed. The next eight may be performed
 * before or after it: each succeeds or is refused, never touches unmapped memory. */
static void dereg_in_flight(uint8_t *back) {
  PHASE("deregistration between operations in flight");
  static uint8_t b[256 << 10];
  memset(b, 0x77, sizeof b);
  ramp_op_t before[8], racing[8];
  for (int i = 0; i < 4; i++) {
    AM_SAFE(ramp_Put(P.ep, 1, R.map, (uint64_t)i * sizeof b, b, sizeof b, &before[2 * i]));
    AM_SAFE(ramp_Get(P.ep, 1, R.map, 0, back + (size_t)i * sizeof b, sizeof b, &before[2 * i + 1]));
  }
  AM_SAFE(AM_Request0(P.ep, 1, H_DEREG));
  for (int i = 0; i < 4; i++) {
    AM_SAFE(ramp_Put(P.ep, 1, R.map, 0, b, sizeof b, &racing[2 * i]));
    AM_SAFE(ramp_Get(P.ep, 1, R.map, 0, back, 16, &racing[2 * i + 1]));
  }
  for (int i = 0; i < 8; i++) {
    int s = wait_op(before[i]);
    CHECK(s == 0, "operation %d before the deregistration: %s", i, ct_statusname(s));
  }
  int refused = 0;
  for (int i = 0; i < 8; i++) {
    int s = wait_op(racing[i]);
    CHECK(s == 0 || s == EBADSEGOFF, "operation %d racing the deregistration: %s", i, ct_statusname(s));
    refused += s == EBADSEGOFF;
  }
  ct_note("%d of 8 operations racing the deregistration were refused", refused);
}

/* Rank 0, once rank 1 has deregistered and unmapped: every operation is refused. */
static void after_dereg(uint8_t *back) {
  PHASE("operations after the deregistration");
  static uint8_t b[64 << 10];
  ramp_op_t op;
  for (int i = 0; i < 4; i++) {
    AM_SAFE(ramp_Put(P.ep, 1, R.map, 0, b, sizeof b, &op));
    int s = wait_op(op);
    CHECK(s == EBADSEGOFF, "a put after the deregistration: %s", ct_statusname(s));
    AM_SAFE(ramp_Get(P.ep, 1, R.map, 0, back, 16, &op));
    s = wait_op(op);
    CHECK(s == EBADSEGOFF, "a get after the deregistration: %s", ct_statusname(s));
  }
}

static void many(int use_test) {
  enum { N = 1000 };
  static ramp_op_t ops[2 * N];
  static uint8_t src[N][32], dst[N][32];
  for (int i = 0; i < N; i++) {
    memset(src[i], (i % 250) + 1, 32);
    memset(dst[i], 0, 32);
    AM_SAFE(ramp_Put(P.ep, 1, R.rw, (uint64_t)i * 64, src[i], 32, &ops[i]));
  }
  for (int i = 0; i < N; i++) AM_SAFE(ramp_Get(P.ep, 1, R.rw, (uint64_t)i * 64, dst[i], 32, &ops[N + i]));
  int left = 2 * N;
  ct_waiting(__FILE__, __LINE__, "every operation to complete");
  while (left > 0) {
    for (int i = 0; i < 2 * N; i++) {
      if (!ops[i]) continue;
      int done = 0, s = -1;
      if (use_test) {
        AM_SAFE(ramp_Test(P.ep, ops[i], &done, &s));
      } else {
        AM_SAFE(ramp_Wait(P.ep, ops[i], &s));
        done = 1;
      }
      if (done) {
        CHECK(s == 0, "operation %d: %s", i, ct_statusname(s));
        ops[i] = 0;
        left--;
      }
    }
  }
  /* a get issued after its put (to the same peer) need not see it; these completed puts
   * were all waited for before... not: check only what the promise gives: the puts are
   * complete now, so a fresh get sees them */
  static uint8_t again[N * 64];
  ramp_op_t op;
  AM_SAFE(ramp_Get(P.ep, 1, R.rw, 0, again, sizeof again, &op));
  CHECK(wait_op(op) == 0, "get failed");
  for (int i = 0; i < N; i++)
    for (int k = 0; k < 32; k++) CHECK(again[i * 64 + k] == (i % 250) + 1, "put %d not in place", i);
}

/* Rank 1 spins (no ramp call) until the word at `flag` of rw is `value` (the progress
 * thread not serving: a hang, the alarm). */
static double spin_until(volatile uint32_t *flag, uint32_t value) {
  ct_waiting(__FILE__, __LINE__, "spinning for the flag (the progress thread did not serve?)");
  double t0 = now_sec();
  volatile double x = 1.0;
  while (*flag != value) {
    for (int i = 0; i < 100000; i++) x = x * 1.0000001 + 1e-9;
  }
  return now_sec() - t0;
}

int main(void) {
  ct_init("t_rma", CT_WATCHDOG_SECS);
  PHASE("setup");
  spawn_pair(&P, AM_SEQ, 16, setup, NULL);
  uint8_t *buf = malloc(RWLEN), *back = malloc(RWLEN);
  CHECK(buf && back, "malloc");
  regions_t mine = {0, 0, 0, 0};
  if (P.rank == 1) {
    /* T_RMA_ALLOC=1: rw and ro are memory ramp allocates (ramp_AllocRegion), which
     * the initiator maps when on this host: the same checks through the mapping */
    const char *alloc = getenv("T_RMA_ALLOC");
    int use_alloc = alloc && alloc[0] == '1';
    if (use_alloc) {
      void *a = NULL, *b = NULL;
      AM_SAFE(ramp_AllocRegion(P.ep, RWLEN, RAMP_REGION_READ | RAMP_REGION_WRITE, &a, &mine.rw));
      AM_SAFE(ramp_AllocRegion(P.ep, SMALL, RAMP_REGION_READ, &b, &mine.ro));
      rw = a;
      ro = b;
      CHECK(all_zero(rw, RWLEN) && all_zero(ro, SMALL), "allocated regions not zeroed");
    } else {
      rw = calloc(1, RWLEN);
      ro = calloc(1, SMALL);
    }
    wo = calloc(1, SMALL);
    mapped = mmap(NULL, MAPLEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(rw && ro && wo && mapped != MAP_FAILED, "allocation");
    if (!use_alloc) {
      AM_SAFE(ramp_RegisterRegion(P.ep, rw, RWLEN, RAMP_REGION_READ | RAMP_REGION_WRITE, &mine.rw));
      AM_SAFE(ramp_RegisterRegion(P.ep, ro, SMALL, RAMP_REGION_READ, &mine.ro));
    }
    AM_SAFE(ramp_RegisterRegion(P.ep, wo, SMALL, RAMP_REGION_WRITE, &mine.wo));
    AM_SAFE(ramp_RegisterRegion(P.ep, mapped, MAPLEN, RAMP_REGION_READ | RAMP_REGION_WRITE, &mine.map));
    CHECK(mine.rw && mine.ro != mine.rw && mine.wo != mine.ro, "region ids not distinct");
  }
  regions_t theirs;
  pair_exchange(&P, &mine, &theirs, sizeof mine);
  R = P.rank == 0 ? theirs : mine;

  if (P.rank == 0) {
    bad_args();
    sizes(buf, back);
    refusals(back);
  }
  pair_barrier(&P); /* rank 1 serves while it polls in here */
  if (P.rank == 1) {
    PHASE("target: contents after the sizes and the refusals");
    CHECK(same(rw, 5u << 20, 99), "the 5 MiB put is not in place");
    CHECK(all_zero(rw + RWLEN - 100, 100), "a refused put wrote the region's tail");
    CHECK(all_zero(ro, SMALL), "a put wrote into a read-only region");
    CHECK(same(seg, SEGLEN, 5), "the put into region 0 is not in the segment");
  }
  pair_barrier(&P);
  if (P.rank == 0) notify_and_fence(buf);
  if (P.rank == 1) {
    PHASE("target: ramp_WaitFlag");
    AM_SAFE(ramp_WaitFlag(P.ep, (const volatile uint32_t *)(rw + 4096 + (1u << 20)), 0xc0ffee));
    CHECK(same(rw + 4096, 1u << 20, 33), "the flag was set before the bytes were all there");
  }
  pair_barrier(&P);
  if (P.rank == 0) ordering();
  pair_barrier(&P);
  if (P.rank == 1) {
    POLL_UNTIL(P.eb, check_ok + check_bad == ORDER_ROUNDS, 60, "ordering: %d of 20 checks ran", check_ok + check_bad);
    CHECK(check_bad == 0, "%d AM handlers ran before the put sent ahead of them", check_bad);
  }
  pair_barrier(&P);
  if (P.rank == 0) dereg_in_flight(back);
  if (P.rank == 1) POLL_UNTIL(P.eb, dereg_ran == 1, 60, "the deregistration request never ran");
  pair_barrier(&P);
  if (P.rank == 0) after_dereg(back);
  pair_barrier(&P);
  if (P.rank == 1) CHECK(dereg_ran == 1 && mapped == NULL, "the deregistration handler did not run");
  if (P.rank == 0) {
    PHASE("1000 outstanding operations, ramp_Test");
    many(1);
  }
  pair_barrier(&P);

  /* ---- the progress thread: rank 1 computes, rank 0 puts and gets ---------------- */
  if (P.rank == 1) AM_SAFE(ramp_SetProgressThread(P.eb, 1));
  pair_barrier(&P);
  if (P.rank == 1) {
    PHASE("target: spinning while the progress thread serves");
    memset(rw, 0, 1000 * 64);
    double s = spin_until((volatile uint32_t *)(rw + RWLEN - 4), 4242);
    CHECK(mark_ran == 0, "a handler ran in the progress thread");
    ct_note("target spun %.2f s without calling ramp", s);
    AM_SAFE(ramp_SetProgressThread(P.eb, 0));
    POLL_UNTIL(P.eb, mark_ran == 1, 30, "the AM request sent during the spin never ran");
  } else {
    PHASE("1000 puts and gets while the target spins");
    sleep_ms(200);
    AM_SAFE(AM_Request0(P.ep, 1, H_MARK));
    many(0);
    sleep_ms(1000); /* the target keeps computing meanwhile */
    many(1);
    uint8_t z[4] = {0};
    AM_SAFE(ramp_PutNotify(P.ep, 1, R.rw, RWLEN - 8, z, 4, RWLEN - 4, 4242, NULL));
    AM_SAFE(ramp_Fence(P.ep));
  }
  pair_barrier(&P);
  AM_SAFE(ramp_SetProgressThread(P.eb, 1)); /* left on: AM_Terminate stops it */
  pair_fault_report(&P);
  pair_finish(&P, 50);
  printf("t_rma: OK\n");
  return 0;
}
