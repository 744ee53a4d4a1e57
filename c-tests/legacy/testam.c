/*
 * testam -- the broadest of the AMX tests, ported to the AMUDP API:
 *  - environment: A, B, C, ABC and a long name are putenv'd before start-up and must be
 *    returned exactly by AMX_SPMDgetenvMaster at the end;
 *  - handler table limits, the SPMD translation table and tags;
 *  - a private endpoint: two bundles, table size, MapAny/UnMap/Map, segment, tag,
 *    MoveEndpoint + FreeBundle, everything surviving the move, SetExpectedResources,
 *    SetHandlerAny and a loopback AM_Request0 whose handler checks the token
 *    (AMX_GetSourceId == 0, source endpoint, destination endpoint, tag, AMX_GetTokenInfo);
 *  - 102 handlers at 100..216: short, medium and long requests and replies with 0..16
 *    arguments (argument k is 0xBABE7001+k); per iteration, to partner (rank+1)%P, for
 *    every N: AM_RequestN, AM_RequestIN with 24 bytes, two AM_RequestXferN to offset
 *    24*N (source buffers overwritten right after each call); the medium reply sends the
 *    received buffer back after modifying it in place, the long reply goes to offset
 *    (17+N)*24; 68 replies per iteration.
 * Usage: testam iters [P|B]
 */
#include "apputils.h"

#define NUMARGS      17                 /* 0..16 */
#define PAYLOAD      24
#define SREQ_BASE    100
#define SREP_BASE    120
#define MREQ_BASE    140
#define MREP_BASE    160
#define LREQ_BASE    180
#define LREP_BASE    200                /* last handler: 216 */
#define PER_ITER     (4 * NUMARGS)      /* replies per iteration: 68 */

enum { K_SHORT = 0, K_MEDIUM = 1, K_LONG = 2 };

#define ARGVAL(k) ((int32_t)(0xBABE7001u + (uint32_t)(k)))

/* long names and values: must come back unchanged from AMX_SPMDgetenvMaster */
#define LONGNAME "AMX_TESTAM_A_REALLY_QUITE_LONG_ENVIRONMENT_VARIABLE_NAME_0123456789_ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define LONGVAL  "A Really Long Environment Value, with spaces, = signs and commas: 0123456789abcdefghijklmnopqrstuvwxyz"

static ep_t ep;
static eb_t eb;
static int myproc, numprocs, partner, leftnode;
static char *seg;
static volatile int replies = 0;
static volatile int requests = 0;
static int rxcount[3][NUMARGS];          /* requests handled per kind and N */
static int repcount[4][NUMARGS];         /* replies handled: short, medium, long(2) */
static int cur_iter = 0;

static unsigned char pat(int sender, int kind, int n, int iter, int j) {
  return (unsigned char)((sender * 29 + kind * 53 + n * 7 + iter * 13 + j * 5 + 3) & 0xff);
}

static void fail_handler(const char *what, int n, const char *msg) {
  AMX_FatalErr("testam node %i: %s handler with %i args: %s", myproc, what, n, msg);
}

static void check_args(const char *what, int n, const int32_t *a) {
  int k;
  for (k = 0; k < n; k++) {
    if (a[k] != ARGVAL(k))
      AMX_FatalErr("testam node %i: %s handler with %i args: arg %i is 0x%08x, expected 0x%08x",
                   myproc, what, n, k, (unsigned)a[k], (unsigned)ARGVAL(k));
  }
}

static void check_token(const char *what, void *token, int n, handler_t h, amx_category_t cat,
                        int is_req) {
  handler_t th = 0;
  amx_category_t tc = amx_Short;
  int treq = -1, src = -1;
  AM_Safe(AMX_GetTokenInfo(token, &th, &tc, &treq));
  if (th != h || tc != cat || treq != is_req) {
    char msg[200];
    snprintf(msg, sizeof(msg), "AMX_GetTokenInfo gave (%i, %i, %i), expected (%i, %i, %i)",
             (int)th, (int)tc, treq, (int)h, (int)cat, is_req);
    fail_handler(what, n, msg);
  }
  AM_Safe(AMX_GetSourceId(token, &src));
  if (src != (is_req ? leftnode : partner)) {
    char msg[100];
    snprintf(msg, sizeof(msg), "source id %i, expected %i", src, is_req ? leftnode : partner);
    fail_handler(what, n, msg);
  }
}

static void check_payload(const char *what, int n, const void *buf, size_t nbytes, int sender,
                          int kind, int iter, unsigned char xorval) {
  const unsigned char *p = (const unsigned char *)buf;
  int j;
  if (nbytes != PAYLOAD) {
    char msg[100];
    snprintf(msg, sizeof(msg), "nbytes %zu, expected %i", nbytes, PAYLOAD);
    fail_handler(what, n, msg);
  }
  for (j = 0; j < PAYLOAD; j++) {
    unsigned char want = (unsigned char)(pat(sender, kind, n, iter, j) ^ xorval);
    if (p[j] != want) {
      char msg[160];
      snprintf(msg, sizeof(msg), "payload byte %i is 0x%02x, expected 0x%02x (iteration %i)", j,
               p[j], want, iter);
      fail_handler(what, n, msg);
    }
  }
}

/* ---- generated parameter/argument lists for 0..16 arguments ---- */
#define PARAMS0
#define PARAMS1 , int32_t a0
#define PARAMS2 , int32_t a0, int32_t a1
#define PARAMS3 , int32_t a0, int32_t a1, int32_t a2
#define PARAMS4 , int32_t a0, int32_t a1, int32_t a2, int32_t a3
#define PARAMS5 , int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t a4
#define PARAMS6 , int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t a4, int32_t a5
#define PARAMS7 , int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t a4, int32_t a5, int32_t a6
#define PARAMS8 , int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t a4, int32_t a5, int32_t a6, int32_t a7
#define PARAMS9 , int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t a4, int32_t a5, int32_t a6, int32_t a7, int32_t a8
#define PARAMS10 , int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t a4, int32_t a5, int32_t a6, int32_t a7, int32_t a8, int32_t a9
#define PARAMS11 , int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t a4, int32_t a5, int32_t a6, int32_t a7, int32_t a8, int32_t a9, int32_t a10
#define PARAMS12 , int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t a4, int32_t a5, int32_t a6, int32_t a7, int32_t a8, int32_t a9, int32_t a10, int32_t a11
#define PARAMS13 , int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t a4, int32_t a5, int32_t a6, int32_t a7, int32_t a8, int32_t a9, int32_t a10, int32_t a11, int32_t a12
#define PARAMS14 , int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t a4, int32_t a5, int32_t a6, int32_t a7, int32_t a8, int32_t a9, int32_t a10, int32_t a11, int32_t a12, int32_t a13
#define PARAMS15 , int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t a4, int32_t a5, int32_t a6, int32_t a7, int32_t a8, int32_t a9, int32_t a10, int32_t a11, int32_t a12, int32_t a13, int32_t a14
#define PARAMS16 , int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t a4, int32_t a5, int32_t a6, int32_t a7, int32_t a8, int32_t a9, int32_t a10, int32_t a11, int32_t a12, int32_t a13, int32_t a14, int32_t a15
#define ARGS0
#define ARGS1 a0,
#define ARGS2 a0, a1,
#define ARGS3 a0, a1, a2,
#define ARGS4 a0, a1, a2, a3,
#define ARGS5 a0, a1, a2, a3, a4,
#define ARGS6 a0, a1, a2, a3, a4, a5,
#define ARGS7 a0, a1, a2, a3, a4, a5, a6,
#define ARGS8 a0, a1, a2, a3, a4, a5, a6, a7,
#define ARGS9 a0, a1, a2, a3, a4, a5, a6, a7, a8,
#define ARGS10 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9,
#define ARGS11 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10,
#define ARGS12 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11,
#define ARGS13 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12,
#define ARGS14 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13,
#define ARGS15 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14,
#define ARGS16 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,
#define VALS0
#define VALS1 , ARGVAL(0)
#define VALS2 , ARGVAL(0), ARGVAL(1)
#define VALS3 , ARGVAL(0), ARGVAL(1), ARGVAL(2)
#define VALS4 , ARGVAL(0), ARGVAL(1), ARGVAL(2), ARGVAL(3)
#define VALS5 , ARGVAL(0), ARGVAL(1), ARGVAL(2), ARGVAL(3), ARGVAL(4)
#define VALS6 , ARGVAL(0), ARGVAL(1), ARGVAL(2), ARGVAL(3), ARGVAL(4), ARGVAL(5)
#define VALS7 , ARGVAL(0), ARGVAL(1), ARGVAL(2), ARGVAL(3), ARGVAL(4), ARGVAL(5), ARGVAL(6)
#define VALS8 , ARGVAL(0), ARGVAL(1), ARGVAL(2), ARGVAL(3), ARGVAL(4), ARGVAL(5), ARGVAL(6), ARGVAL(7)
#define VALS9 , ARGVAL(0), ARGVAL(1), ARGVAL(2), ARGVAL(3), ARGVAL(4), ARGVAL(5), ARGVAL(6), ARGVAL(7), ARGVAL(8)
#define VALS10 , ARGVAL(0), ARGVAL(1), ARGVAL(2), ARGVAL(3), ARGVAL(4), ARGVAL(5), ARGVAL(6), ARGVAL(7), ARGVAL(8), ARGVAL(9)
#define VALS11 , ARGVAL(0), ARGVAL(1), ARGVAL(2), ARGVAL(3), ARGVAL(4), ARGVAL(5), ARGVAL(6), ARGVAL(7), ARGVAL(8), ARGVAL(9), ARGVAL(10)
#define VALS12 , ARGVAL(0), ARGVAL(1), ARGVAL(2), ARGVAL(3), ARGVAL(4), ARGVAL(5), ARGVAL(6), ARGVAL(7), ARGVAL(8), ARGVAL(9), ARGVAL(10), ARGVAL(11)
#define VALS13 , ARGVAL(0), ARGVAL(1), ARGVAL(2), ARGVAL(3), ARGVAL(4), ARGVAL(5), ARGVAL(6), ARGVAL(7), ARGVAL(8), ARGVAL(9), ARGVAL(10), ARGVAL(11), ARGVAL(12)
#define VALS14 , ARGVAL(0), ARGVAL(1), ARGVAL(2), ARGVAL(3), ARGVAL(4), ARGVAL(5), ARGVAL(6), ARGVAL(7), ARGVAL(8), ARGVAL(9), ARGVAL(10), ARGVAL(11), ARGVAL(12), ARGVAL(13)
#define VALS15 , ARGVAL(0), ARGVAL(1), ARGVAL(2), ARGVAL(3), ARGVAL(4), ARGVAL(5), ARGVAL(6), ARGVAL(7), ARGVAL(8), ARGVAL(9), ARGVAL(10), ARGVAL(11), ARGVAL(12), ARGVAL(13), ARGVAL(14)
#define VALS16 , ARGVAL(0), ARGVAL(1), ARGVAL(2), ARGVAL(3), ARGVAL(4), ARGVAL(5), ARGVAL(6), ARGVAL(7), ARGVAL(8), ARGVAL(9), ARGVAL(10), ARGVAL(11), ARGVAL(12), ARGVAL(13), ARGVAL(14), ARGVAL(15)

/* CALL(m, ...): expands the argument list before m sees it */
#define CALL(m, ...) m(__VA_ARGS__)

#define DEF_HANDLERS(N)                                                                     \
  static void sreq_##N(void *token PARAMS##N) {                                             \
    int32_t a[] = { ARGS##N 0 };                                                            \
    check_args("short request", N, a);                                                      \
    check_token("short request", token, N, SREQ_BASE + N, amx_Short, 1);                    \
    rxcount[K_SHORT][N]++;                                                                  \
    requests++;                                                                             \
    AM_Safe(CALL(AM_Reply##N, token, SREP_BASE + N VALS##N));                               \
  }                                                                                         \
  static void srep_##N(void *token PARAMS##N) {                                             \
    int32_t a[] = { ARGS##N 0 };                                                            \
    check_args("short reply", N, a);                                                        \
    check_token("short reply", token, N, SREP_BASE + N, amx_Short, 0);                      \
    repcount[0][N]++;                                                                       \
    replies++;                                                                              \
  }                                                                                         \
  static void mreq_##N(void *token, void *buf, size_t nbytes PARAMS##N) {                   \
    int32_t a[] = { ARGS##N 0 };                                                            \
    unsigned char *p = (unsigned char *)buf;                                                \
    int j;                                                                                  \
    check_args("medium request", N, a);                                                     \
    check_token("medium request", token, N, MREQ_BASE + N, amx_Medium, 1);                  \
    if ((uintptr_t)buf % 8) fail_handler("medium request", N, "buffer not 8-byte aligned"); \
    check_payload("medium request", N, buf, nbytes, leftnode, K_MEDIUM,                     \
                  rxcount[K_MEDIUM][N], 0);                                                 \
    rxcount[K_MEDIUM][N]++;                                                                 \
    requests++;                                                                             \
    for (j = 0; j < PAYLOAD; j++) p[j] ^= 0x5A;   /* modify in place, send it back */       \
    AM_Safe(CALL(AM_ReplyI##N, token, MREP_BASE + N, buf, nbytes VALS##N));                 \
    memset(buf, 0xCC, nbytes);                    /* then clobber it */                     \
  }                                                                                         \
  static void mrep_##N(void *token, void *buf, size_t nbytes PARAMS##N) {                   \
    int32_t a[] = { ARGS##N 0 };                                                            \
    check_args("medium reply", N, a);                                                       \
    check_token("medium reply", token, N, MREP_BASE + N, amx_Medium, 0);                    \
    if ((uintptr_t)buf % 8) fail_handler("medium reply", N, "buffer not 8-byte aligned");   \
    check_payload("medium reply", N, buf, nbytes, myproc, K_MEDIUM, cur_iter, 0x5A);        \
    repcount[1][N]++;                                                                       \
    replies++;                                                                              \
  }                                                                                         \
  static void lreq_##N(void *token, void *buf, size_t nbytes PARAMS##N) {                   \
    int32_t a[] = { ARGS##N 0 };                                                            \
    unsigned char rb[PAYLOAD];                                                              \
    int j;                                                                                  \
    check_args("long request", N, a);                                                       \
    check_token("long request", token, N, LREQ_BASE + N, amx_Long, 1);                      \
    if ((char *)buf != seg + PAYLOAD * N)                                                   \
      fail_handler("long request", N, "buf != seg + 24*N");                                 \
    check_payload("long request", N, buf, nbytes, leftnode, K_LONG,                         \
                  rxcount[K_LONG][N] / 2, 0);                                               \
    rxcount[K_LONG][N]++;                                                                   \
    requests++;                                                                             \
    for (j = 0; j < PAYLOAD; j++) rb[j] = (unsigned char)(((unsigned char *)buf)[j] ^ 0xA5);\
    AM_Safe(CALL(AM_ReplyXfer##N, token, (17 + N) * PAYLOAD, LREP_BASE + N, rb, PAYLOAD     \
                 VALS##N));                                                                 \
    memset(rb, 0xCC, sizeof(rb));                                                           \
  }                                                                                         \
  static void lrep_##N(void *token, void *buf, size_t nbytes PARAMS##N) {                   \
    int32_t a[] = { ARGS##N 0 };                                                            \
    check_args("long reply", N, a);                                                         \
    check_token("long reply", token, N, LREP_BASE + N, amx_Long, 0);                        \
    if ((char *)buf != seg + PAYLOAD * (17 + N))                                            \
      fail_handler("long reply", N, "buf != seg + 24*(17+N)");                              \
    check_payload("long reply", N, buf, nbytes, myproc, K_LONG, cur_iter, 0xA5);            \
    repcount[2][N]++;                                                                       \
    replies++;                                                                              \
  }                                                                                         \
  static void send_##N(void) {                                                              \
    unsigned char mbuf[PAYLOAD], lbuf[PAYLOAD];                                             \
    int j, x;                                                                               \
    AM_Safe(CALL(AM_Request##N, ep, partner, SREQ_BASE + N VALS##N));                       \
    for (j = 0; j < PAYLOAD; j++) mbuf[j] = pat(myproc, K_MEDIUM, N, cur_iter, j);          \
    AM_Safe(CALL(AM_RequestI##N, ep, partner, MREQ_BASE + N, mbuf, PAYLOAD VALS##N));       \
    memset(mbuf, 0xEE, sizeof(mbuf));                                                       \
    for (x = 0; x < 2; x++) { /* the second stands in for AM_RequestXferAsync */            \
      for (j = 0; j < PAYLOAD; j++) lbuf[j] = pat(myproc, K_LONG, N, cur_iter, j);          \
      AM_Safe(CALL(AM_RequestXfer##N, ep, partner, PAYLOAD * N, LREQ_BASE + N, lbuf,        \
                   PAYLOAD VALS##N));                                                       \
      memset(lbuf, 0xEE, sizeof(lbuf));                                                     \
    }                                                                                       \
  }                                                                                         \
  static void install_##N(void) {                                                           \
    AM_Safe(AM_SetHandler(ep, SREQ_BASE + N, sreq_##N));                                    \
    AM_Safe(AM_SetHandler(ep, SREP_BASE + N, srep_##N));                                    \
    AM_Safe(AM_SetHandler(ep, MREQ_BASE + N, mreq_##N));                                    \
    AM_Safe(AM_SetHandler(ep, MREP_BASE + N, mrep_##N));                                    \
    AM_Safe(AM_SetHandler(ep, LREQ_BASE + N, lreq_##N));                                    \
    AM_Safe(AM_SetHandler(ep, LREP_BASE + N, lrep_##N));                                    \
  }

DEF_HANDLERS(0)
DEF_HANDLERS(1)
DEF_HANDLERS(2)
DEF_HANDLERS(3)
DEF_HANDLERS(4)
DEF_HANDLERS(5)
DEF_HANDLERS(6)
DEF_HANDLERS(7)
DEF_HANDLERS(8)
DEF_HANDLERS(9)
DEF_HANDLERS(10)
DEF_HANDLERS(11)
DEF_HANDLERS(12)
DEF_HANDLERS(13)
DEF_HANDLERS(14)
DEF_HANDLERS(15)
DEF_HANDLERS(16)

static void (*const sendfns[NUMARGS])(void) = {
  send_0, send_1, send_2, send_3, send_4, send_5, send_6, send_7, send_8,
  send_9, send_10, send_11, send_12, send_13, send_14, send_15, send_16
};
static void (*const installfns[NUMARGS])(void) = {
  install_0, install_1, install_2, install_3, install_4, install_5, install_6, install_7,
  install_8, install_9, install_10, install_11, install_12, install_13, install_14,
  install_15, install_16
};

/* ------------------------------------------------------------------------------------
 * the private endpoint
 * ---------------------------------------------------------------------------------- */

static const tag_t t1 = 0x1234ABCD;
static ep_t ep1;
static en_t name1;
static volatile int loopback_calls = 0;
static handler_t loop_idx;

static void loopback_handler(void *token) {
  int srcid = -1, is_req = -1;
  en_t src;
  ep_t dest = NULL;
  tag_t tag = 0;
  handler_t h = 0;
  amx_category_t cat = amx_Long;
  AM_Safe(AMX_GetSourceId(token, &srcid));
  if (srcid != 0) AMX_FatalErr("testam: loopback AMX_GetSourceId gave %i, expected 0", srcid);
  AM_Safe(AM_GetSourceEndpoint(token, &src));
  if (!AMX_enEqual(src, name1))
    AMX_FatalErr("testam: loopback AM_GetSourceEndpoint is not the endpoint's own name");
  AM_Safe(AM_GetDestEndpoint(token, &dest));
  if (dest != ep1) AMX_FatalErr("testam: loopback AM_GetDestEndpoint is not ep1");
  AM_Safe(AM_GetMsgTag(token, &tag));
  if (tag != t1)
    AMX_FatalErr("testam: loopback AM_GetMsgTag gave 0x%llx, expected 0x%llx",
                 (unsigned long long)tag, (unsigned long long)t1);
  AM_Safe(AMX_GetTokenInfo(token, &h, &cat, &is_req));
  if (h != loop_idx || cat != amx_Short || is_req != 1)
    AMX_FatalErr("testam: loopback AMX_GetTokenInfo gave (%i, %i, %i), expected (%i, %i, 1)",
                 (int)h, (int)cat, is_req, (int)loop_idx, (int)amx_Short);
  loopback_calls++;
}

static void private_endpoint_test(void) {
  eb_t eb1, eb2;
  int maxtrans = 0, ntrans = 0, idx = -1;
  tag_t tag = 0;
  en_t name;
  uintptr_t maxseg = 0, seglen = 0;
  void *segaddr = NULL;
  static uint32_t word4;

  AM_Safe(AM_AllocateBundle(AM_SEQ, &eb1));
  AM_Safe(AM_AllocateBundle(AM_SEQ, &eb2));
  AM_Safe(AM_AllocateEndpoint(eb1, &ep1, &name1));

  AM_Safe(AM_MaxNumTranslations(&maxtrans));
  APP_CHECK(maxtrans >= 256, "AM_MaxNumTranslations gave %i", maxtrans);
  if (maxtrans > 1024) maxtrans = 1024;
  AM_Safe(AM_GetNumTranslations(ep1, &ntrans));
  APP_CHECK(ntrans >= 1, "AM_GetNumTranslations gave %i", ntrans);
  AM_Safe(AM_SetNumTranslations(ep1, maxtrans));
  AM_Safe(AM_GetNumTranslations(ep1, &ntrans));
  APP_CHECK(ntrans == maxtrans, "AM_GetNumTranslations gave %i after setting %i", ntrans,
            maxtrans);

  AM_Safe(AM_MapAny(ep1, &idx, name1, t1));
  APP_CHECK(idx == 0, "AM_MapAny on an empty table gave index %i, expected 0", idx);
  APP_CHECK(AM_GetTranslationInuse(ep1, idx) == AM_OK, "entry %i not in use after MapAny", idx);
  AM_Safe(AM_GetTranslationTag(ep1, idx, &tag));
  APP_CHECK(tag == t1, "translation tag 0x%llx, expected 0x%llx", (unsigned long long)tag,
            (unsigned long long)t1);
  AM_Safe(AM_UnMap(ep1, idx));
  APP_CHECK(AM_GetTranslationInuse(ep1, idx) != AM_OK, "entry %i still in use after UnMap",
            idx);
  AM_Safe(AM_Map(ep1, idx, name1, t1));

  AM_Safe(AM_MaxSegLength(&maxseg));
  APP_CHECK(maxseg >= 4, "AM_MaxSegLength gave %llu", (unsigned long long)maxseg);
  AM_Safe(AM_SetSeg(ep1, &word4, 4));
  AM_Safe(AM_SetTag(ep1, t1));

  AM_Safe(AM_MoveEndpoint(ep1, eb1, eb2));
  AM_Safe(AM_FreeBundle(eb1));

  /* everything survives the move */
  APP_CHECK(AM_GetTranslationInuse(ep1, idx) == AM_OK, "entry %i lost by MoveEndpoint", idx);
  AM_Safe(AM_GetTranslationName(ep1, idx, &name));
  APP_CHECK(AMX_enEqual(name, name1), "translation name changed by MoveEndpoint");
  AM_Safe(AM_GetTranslationTag(ep1, idx, &tag));
  APP_CHECK(tag == t1, "translation tag changed by MoveEndpoint");
  AM_Safe(AM_GetSeg(ep1, &segaddr, &seglen));
  APP_CHECK(segaddr == (void *)&word4 && seglen == 4, "segment changed by MoveEndpoint");
  AM_Safe(AM_GetNumTranslations(ep1, &ntrans));
  APP_CHECK(ntrans == maxtrans, "table size changed by MoveEndpoint: %i", ntrans);
  AM_Safe(AM_GetTag(ep1, &tag));
  APP_CHECK(tag == t1, "endpoint tag changed by MoveEndpoint");

  AM_Safe(AM_SetExpectedResources(ep1, 1, 1));
  AM_Safe(AM_SetHandlerAny(ep1, &loop_idx, loopback_handler));
  {
    volatile int maxh = AM_MaxNumHandlers(); /* a run-time check: handler_t is 8 bits */
    APP_CHECK(loop_idx >= 1 && (int)loop_idx < maxh, "AM_SetHandlerAny gave index %i",
              (int)loop_idx);
  }

  /* loopback: the handler runs inside the call */
  AM_Safe(AM_Request0(ep1, idx, loop_idx));
  APP_CHECK(loopback_calls == 1, "loopback handler ran %i times inside AM_Request0",
            loopback_calls);

  AM_Safe(AM_FreeEndpoint(ep1));
  AM_Safe(AM_FreeBundle(eb2));
}

/* linked, never called */
static int (*volatile link_setexitcallback)(amudp_exitcallback_t) = AMX_SPMDSetExitCallback;
static int (*volatile link_isworker)(char **) = AMX_SPMDIsWorker;
static int (*volatile link_allgather)(void *, void *, size_t) = AMX_SPMDAllGather;
static void (**volatile link_killmyprocess)(int) = &AMX_SPMDkillmyprocess;

static void check_env(const char *key, const char *want) {
  const char *v = AMX_SPMDgetenvMaster(key);
  APP_CHECK(v != NULL, "AMX_SPMDgetenvMaster(\"%s\") is NULL, expected \"%s\"", key, want);
  APP_CHECK(strcmp(v, want) == 0, "AMX_SPMDgetenvMaster(\"%s\") is \"%s\", expected \"%s\"", key,
            v, want);
}

int main(int argc, char **argv) {
  uint64_t networkpid;
  int iters, polling = 1, i, n, nh = 0;
  tag_t mytag = 0, t;
  double t0, t1time;

  putenv((char *)"A=A");
  putenv((char *)"B=B");
  putenv((char *)"C=C");
  putenv((char *)"ABC=ABC");
  putenv((char *)(LONGNAME "=" LONGVAL));

  TEST_STARTUP(argc, argv, networkpid, eb, ep, 1, 2, "iterations [P|B]");
  myproc = AMX_SPMDMyProc();
  numprocs = AMX_SPMDNumProcs();
  partner = (myproc + 1) % numprocs;
  leftnode = (myproc + numprocs - 1) % numprocs;
  iters = atoi(argv[1]);
  if (iters < 1) iters = 1;
  if (argc > 2) {
    if (argv[2][0] == 'B' || argv[2][0] == 'b') polling = 0;
    else if (argv[2][0] != 'P' && argv[2][0] != 'p') {
      if (myproc == 0) fprintf(stderr, "testam: mode must be P or B, not %s\n", argv[2]);
      AMX_SPMDExit(1);
    }
  }
  APP_CHECK(link_setexitcallback && link_isworker && link_allgather && link_killmyprocess &&
                *link_killmyprocess,
            "SPMD entry points missing");

  /* handler table */
  APP_CHECK(AM_MaxNumHandlers() >= 256, "AM_MaxNumHandlers() is %i", (int)AM_MaxNumHandlers());
  AM_Safe(AM_SetNumHandlers(ep, AM_MaxNumHandlers()));
  AM_Safe(AM_GetNumHandlers(ep, &nh));
  APP_CHECK(nh >= AM_MaxNumHandlers(), "AM_GetNumHandlers gave %i", nh);
  AM_Safe(AM_GetTag(ep, &mytag));

  /* the SPMD translation table */
  for (n = 0; n < numprocs; n++) {
    APP_CHECK(AM_GetTranslationInuse(ep, n) == AM_OK, "translation %i not in use", n);
    AM_Safe(AM_GetTranslationTag(ep, n, &t));
    if (n == myproc)
      APP_CHECK(t == mytag, "own translation tag 0x%llx != own tag 0x%llx",
                (unsigned long long)t, (unsigned long long)mytag);
  }
  APP_CHECK(AM_GetTranslationInuse(ep, numprocs) != AM_OK,
            "translation %i (= number of processes) in use", numprocs);

  private_endpoint_test();

  /* the 102 handlers */
  seg = (char *)malloc(2 * NUMARGS * PAYLOAD);
  APP_CHECK(seg != NULL, "out of memory");
  memset(seg, 0, 2 * NUMARGS * PAYLOAD);
  AM_Safe(AM_SetSeg(ep, seg, 2 * NUMARGS * PAYLOAD));
  setupUtilHandlers(ep, eb);
  for (n = 0; n < NUMARGS; n++) installfns[n]();
  AM_Safe(AMX_SPMDBarrier());

  t0 = getCurrentTimeSec();
  for (i = 0; i < iters; i++) {
    cur_iter = i;
    for (n = 0; n < NUMARGS; n++) sendfns[n]();
    while (replies < PER_ITER * (i + 1)) {
      if (polling) AM_Safe(AM_Poll(eb));
      else AM_PollBlock(eb);
    }
    APP_CHECK(replies == PER_ITER * (i + 1), "%i replies after iteration %i", replies, i);
  }
  /* everything sent to us has been handled */
  while (requests < PER_ITER * iters) {
    if (polling) AM_Safe(AM_Poll(eb));
    else AM_PollBlock(eb);
  }
  t1time = getCurrentTimeSec();
  AM_Safe(AMX_SPMDBarrier());
  APP_CHECK(requests == PER_ITER * iters, "%i requests handled, expected %i", requests,
            PER_ITER * iters);
  APP_CHECK(replies == PER_ITER * iters, "%i replies handled, expected %i", replies,
            PER_ITER * iters);
  for (n = 0; n < NUMARGS; n++) {
    APP_CHECK(rxcount[K_SHORT][n] == iters && rxcount[K_MEDIUM][n] == iters &&
                  rxcount[K_LONG][n] == 2 * iters,
              "requests with %i args: short %i, medium %i, long %i", n, rxcount[K_SHORT][n],
              rxcount[K_MEDIUM][n], rxcount[K_LONG][n]);
    APP_CHECK(repcount[0][n] == iters && repcount[1][n] == iters && repcount[2][n] == 2 * iters,
              "replies with %i args: short %i, medium %i, long %i", n, repcount[0][n],
              repcount[1][n], repcount[2][n]);
  }

  /* the launcher's environment */
  check_env("A", "A");
  check_env("B", "B");
  check_env("C", "C");
  check_env("ABC", "ABC");
  check_env(LONGNAME, LONGVAL);

  if (myproc == 0) {
    printf("testam: procs=%i iters=%i mode=%s messages_per_node=%i time=%.3f s "
           "per_round_trip_us=%.2f OK\n",
           numprocs, iters, polling ? "P" : "B", PER_ITER * iters, t1time - t0,
           (t1time - t0) * 1e6 / (PER_ITER * iters));
    fflush(stdout);
  }

  AM_Safe(AMX_SPMDBarrier());
  printGlobalStats();
  AM_Safe(AMX_SPMDBarrier());
  AMX_SPMDExit(0);
  return 0;
}
