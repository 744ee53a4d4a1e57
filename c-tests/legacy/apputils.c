/*
 * apputils.c -- the AMX test utilities (see apputils.h), on the AMUDP API only.
 */
#include "apputils.h"

#include <ctype.h>
#include <signal.h>
#include <sys/select.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define STATS_REQ_HANDLER (APPUTIL_HANDLER_BASE + 0)
#define GET_REQ_HANDLER   (APPUTIL_HANDLER_BASE + 1)
#define GET_REP_HANDLER   (APPUTIL_HANDLER_BASE + 2)
#define PUT_REQ_HANDLER   (APPUTIL_HANDLER_BASE + 3)
#define PUT_REP_HANDLER   (APPUTIL_HANDLER_BASE + 4)
#define READ_REQ_HANDLER  (APPUTIL_HANDLER_BASE + 5)
#define READ_REP_HANDLER  (APPUTIL_HANDLER_BASE + 6)
#define WRITE_REQ_HANDLER (APPUTIL_HANDLER_BASE + 7)
#define WRITE_REP_HANDLER (APPUTIL_HANDLER_BASE + 8)

static ep_t util_ep = NULL;
static eb_t util_eb = NULL;

const char *apputil_ErrorName(int code) {
  switch (code) {
    case AM_OK:           return "AM_OK";
    case AM_ERR_NOT_INIT: return "AM_ERR_NOT_INIT";
    case AM_ERR_BAD_ARG:  return "AM_ERR_BAD_ARG";
    case AM_ERR_RESOURCE: return "AM_ERR_RESOURCE";
    case AM_ERR_NOT_SENT: return "AM_ERR_NOT_SENT";
    case AM_ERR_IN_USE:   return "AM_ERR_IN_USE";
    default:              return "*unknown*";
  }
}

void apputil_fail(void) {
  fflush(stdout);
  fflush(stderr);
  AMX_SPMDExit(1);
  AMX_FatalErr("AMX_SPMDExit(1) returned");
}

int apputil_leading_args(int argc, char **argv) {
  int lead = 1; /* numprocs */
  if (argc > 2 && argv[2] && argv[2][0] && !argv[2][1]) {
    int i;
    for (i = 0; AMUDP_Spawnfn_Desc[i].abbrev; i++) {
      if (toupper((unsigned char)AMUDP_Spawnfn_Desc[i].abbrev) ==
          toupper((unsigned char)argv[2][0])) {
        lead = 2;
        break;
      }
    }
  }
  return lead;
}

/* ------------------------------------------------------------------------------------
 * timers
 * ---------------------------------------------------------------------------------- */

int64_t getCurrentTimeMicrosec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

double getCurrentTimeSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void outputTimerStats(void) {
  int i;
  double t0, t1, gran = 1e9;
  for (i = 0; i < 100; i++) {
    double a = getCurrentTimeSec(), b;
    do { b = getCurrentTimeSec(); } while (b == a);
    if (b - a < gran) gran = b - a;
  }
  t0 = getCurrentTimeSec();
  for (i = 0; i < 10000; i++) (void)getCurrentTimeSec();
  t1 = getCurrentTimeSec();
  if (AMX_SPMDMyProc() == 0)
    printf("Timer granularity: %.3f us, overhead: %.3f us\n", gran * 1e6,
           (t1 - t0) * 1e6 / 10000);
  fflush(stdout);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double apputil_median(double *a, int n) {
  if (n <= 0) return 0.0;
  qsort(a, (size_t)n, sizeof(double), cmp_double);
  if (n % 2) return a[n / 2];
  return (a[n / 2 - 1] + a[n / 2]) / 2.0;
}

/* ------------------------------------------------------------------------------------
 * statistics
 * ---------------------------------------------------------------------------------- */

static amx_stats_t *statsbuf = NULL;   /* rank 0: one per rank */
static volatile int statscalls = 0;

static void stats_request_handler(void *token, void *buf, int nbytes, int32_t procnum) {
  int nprocs = AMX_SPMDNumProcs();
  (void)token;
  if (AMX_SPMDMyProc() != 0 || !statsbuf)
    AMX_FatalErr("stats_request_handler: statistics sent to node %i", AMX_SPMDMyProc());
  if (nbytes != (int)sizeof(amx_stats_t))
    AMX_FatalErr("stats_request_handler: nbytes %i != sizeof(amx_stats_t) %i", nbytes,
                 (int)sizeof(amx_stats_t));
  if (procnum < 0 || procnum >= nprocs)
    AMX_FatalErr("stats_request_handler: bad node number %i", (int)procnum);
  if (((uintptr_t)buf) % 8)
    AMX_FatalErr("stats_request_handler: medium buffer %p is not 8-byte aligned", buf);
  memcpy(&statsbuf[procnum], buf, sizeof(amx_stats_t));
  statscalls++;
  /* no reply: the library replies automatically */
}

void printGlobalStats(void) {
  amx_stats_t stats;
  int myproc = AMX_SPMDMyProc();
  int nprocs = AMX_SPMDNumProcs();
  int64_t start;

  AM_Safe(AMX_SPMDBarrier());
  /* about 10 ms of polling, so the last replies and acknowledgements get counted */
  start = getCurrentTimeMicrosec();
  while (getCurrentTimeMicrosec() - start < 10000) AM_Safe(AM_Poll(util_eb));

  AM_Safe(AMX_GetEndpointStatistics(util_ep, &stats));
  AM_Safe(AMX_SPMDBarrier());

  if (sizeof(amx_stats_t) >= AM_MaxMedium())
    AMX_FatalErr("sizeof(amx_stats_t) %i does not fit in a medium message",
                 (int)sizeof(amx_stats_t));
  /* every rank, rank 0 included (loopback): no reply expected */
  AM_Safe(AM_RequestI1(util_ep, 0, STATS_REQ_HANDLER, &stats, sizeof(amx_stats_t), myproc));

  if (myproc == 0) {
    amx_stats_t global = AMX_initial_stats;
    int i;
    while (statscalls < nprocs) {
      struct timeval tv;
      tv.tv_sec = 0;
      tv.tv_usec = 1000;
      select(0, NULL, NULL, NULL, &tv);
      AM_Safe(AM_Poll(util_eb));
    }
    for (i = 0; i < nprocs; i++) AM_Safe(AMX_AggregateStatistics(&global, &statsbuf[i]));
    fflush(stdout);
    fprintf(stderr, "--------------------------------------------------\n"
                    "Global stats:\n");
    AMX_DumpStatistics(stderr, &global, 1);
    fprintf(stderr, "--------------------------------------------------\n");
    fflush(stderr);
    statscalls = 0;
  }
  AM_Safe(AMX_SPMDBarrier());
}

/* ------------------------------------------------------------------------------------
 * remote words: requests carry pointers as hi/lo halves
 * ---------------------------------------------------------------------------------- */

/* args: address (2), where to put the value (2), counter to bump (2) */
static void get_request_handler(void *token, int addr_hi, int addr_lo, int val_hi, int val_lo,
                                int ctr_hi, int ctr_lo) {
  uint32_t *p = (uint32_t *)APPUTIL_MAKEPTR(addr_hi, addr_lo);
  AM_Safe(AM_Reply5(token, GET_REP_HANDLER, (int32_t)*p, val_hi, val_lo, ctr_hi, ctr_lo));
}
static void get_reply_handler(void *token, int val, int val_hi, int val_lo, int ctr_hi,
                              int ctr_lo) {
  (void)token;
  *(volatile uint32_t *)APPUTIL_MAKEPTR(val_hi, val_lo) = (uint32_t)val;
  (*(volatile uint32_t *)APPUTIL_MAKEPTR(ctr_hi, ctr_lo))++;
}
/* args: address (2), value, counter to bump (2) */
static void put_request_handler(void *token, int addr_hi, int addr_lo, int val, int ctr_hi,
                                int ctr_lo) {
  *(uint32_t *)APPUTIL_MAKEPTR(addr_hi, addr_lo) = (uint32_t)val;
  AM_Safe(AM_Reply2(token, PUT_REP_HANDLER, ctr_hi, ctr_lo));
}
static void put_reply_handler(void *token, int ctr_hi, int ctr_lo) {
  (void)token;
  (*(volatile uint32_t *)APPUTIL_MAKEPTR(ctr_hi, ctr_lo))++;
}
static void read_request_handler(void *token, int addr_hi, int addr_lo, int val_hi, int val_lo,
                                 int ctr_hi, int ctr_lo) {
  uint32_t *p = (uint32_t *)APPUTIL_MAKEPTR(addr_hi, addr_lo);
  AM_Safe(AM_Reply5(token, READ_REP_HANDLER, (int32_t)*p, val_hi, val_lo, ctr_hi, ctr_lo));
}
static void read_reply_handler(void *token, int val, int val_hi, int val_lo, int ctr_hi,
                               int ctr_lo) {
  (void)token;
  *(volatile uint32_t *)APPUTIL_MAKEPTR(val_hi, val_lo) = (uint32_t)val;
  (*(volatile uint32_t *)APPUTIL_MAKEPTR(ctr_hi, ctr_lo))++;
}
static void write_request_handler(void *token, int addr_hi, int addr_lo, int val, int ctr_hi,
                                  int ctr_lo) {
  *(uint32_t *)APPUTIL_MAKEPTR(addr_hi, addr_lo) = (uint32_t)val;
  AM_Safe(AM_Reply2(token, WRITE_REP_HANDLER, ctr_hi, ctr_lo));
}
static void write_reply_handler(void *token, int ctr_hi, int ctr_lo) {
  (void)token;
  (*(volatile uint32_t *)APPUTIL_MAKEPTR(ctr_hi, ctr_lo))++;
}

uint32_t getWord(int proc, void *addr) {
  volatile uint32_t val = 0;
  volatile uint32_t done = 0;
  AM_Safe(AM_Request6(util_ep, proc, GET_REQ_HANDLER, APPUTIL_HI(addr), APPUTIL_LO(addr),
                      APPUTIL_HI(&val), APPUTIL_LO(&val), APPUTIL_HI(&done),
                      APPUTIL_LO(&done)));
  while (!done) AM_PollBlock(util_eb);
  return val;
}

void putWord(int proc, void *addr, uint32_t val) {
  volatile uint32_t done = 0;
  AM_Safe(AM_Request5(util_ep, proc, PUT_REQ_HANDLER, APPUTIL_HI(addr), APPUTIL_LO(addr),
                      (int32_t)val, APPUTIL_HI(&done), APPUTIL_LO(&done)));
  while (!done) AM_PollBlock(util_eb);
}

static volatile uint32_t reads_issued = 0, reads_done = 0;
static volatile uint32_t writes_issued = 0, writes_done = 0;

void readWord(void *destaddr, int proc, void *addr) {
  reads_issued++;
  AM_Safe(AM_Request6(util_ep, proc, READ_REQ_HANDLER, APPUTIL_HI(addr), APPUTIL_LO(addr),
                      APPUTIL_HI(destaddr), APPUTIL_LO(destaddr), APPUTIL_HI(&reads_done),
                      APPUTIL_LO(&reads_done)));
}

void readSync(void) {
  while (reads_done != reads_issued) AM_PollBlock(util_eb);
}

void writeWord(int proc, void *addr, uint32_t val) {
  writes_issued++;
  AM_Safe(AM_Request5(util_ep, proc, WRITE_REQ_HANDLER, APPUTIL_HI(addr), APPUTIL_LO(addr),
                      (int32_t)val, APPUTIL_HI(&writes_done), APPUTIL_LO(&writes_done)));
}

void writeSync(void) {
  while (writes_done != writes_issued) AM_PollBlock(util_eb);
}

/* ------------------------------------------------------------------------------------
 * set-up
 * ---------------------------------------------------------------------------------- */

static void apputil_signal_handler(int sig) {
  fprintf(stderr, "Node %i got signal %i: exiting\n", AMX_SPMDMyProc(), sig);
  fflush(stderr);
  signal(sig, SIG_DFL);
  AMX_SPMDExit(-1);
}

void setupUtilHandlers(ep_t activeep, eb_t activeeb) {
  util_ep = activeep;
  util_eb = activeeb;
  if (AMX_SPMDMyProc() == 0 && !statsbuf) {
    statsbuf = (amx_stats_t *)calloc((size_t)AMX_SPMDNumProcs(), sizeof(amx_stats_t));
    if (!statsbuf) AMX_FatalErr("out of memory");
  }
  AM_Safe(AM_SetHandler(activeep, STATS_REQ_HANDLER, stats_request_handler));
  AM_Safe(AM_SetHandler(activeep, GET_REQ_HANDLER, get_request_handler));
  AM_Safe(AM_SetHandler(activeep, GET_REP_HANDLER, get_reply_handler));
  AM_Safe(AM_SetHandler(activeep, PUT_REQ_HANDLER, put_request_handler));
  AM_Safe(AM_SetHandler(activeep, PUT_REP_HANDLER, put_reply_handler));
  AM_Safe(AM_SetHandler(activeep, READ_REQ_HANDLER, read_request_handler));
  AM_Safe(AM_SetHandler(activeep, READ_REP_HANDLER, read_reply_handler));
  AM_Safe(AM_SetHandler(activeep, WRITE_REQ_HANDLER, write_request_handler));
  AM_Safe(AM_SetHandler(activeep, WRITE_REP_HANDLER, write_reply_handler));

  signal(SIGSEGV, apputil_signal_handler);
  signal(SIGBUS, apputil_signal_handler);
  signal(SIGFPE, apputil_signal_handler);
  signal(SIGILL, apputil_signal_handler);
}
