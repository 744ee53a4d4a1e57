/* Shared helpers for the ramp C tests: see common.h. */
#include "common.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>

char g_label[64] = "test";
volatile const char *g_phase = "start";

static pid_t g_child_pid = 0;   /* parent of a pair: the child's pid, until reaped */
static unsigned g_alarm_secs = CT_WATCHDOG_SECS;
static char g_waiting[256]; /* ct_waiting: "file:line: format", or empty */

/* ------------------------------------------------------------------------------------ */

const char *ct_errname(int code) {
  const char *s = ramp_ErrorName(code);
  return s ? s : "(null)";
}

const char *ct_statusname(int status) {
  const char *s = ramp_StatusName(status);
  return s ? s : "(null)";
}

const char *ct_opname(int opcode) {
  switch (opcode) {
    case AM_REQUEST_M: return "AM_REQUEST_M";
    case AM_REQUEST_IM: return "AM_REQUEST_IM";
    case AM_REQUEST_XFER_M: return "AM_REQUEST_XFER_M";
    case AM_REPLY_M: return "AM_REPLY_M";
    case AM_REPLY_IM: return "AM_REPLY_IM";
    case AM_REPLY_XFER_M: return "AM_REPLY_XFER_M";
    default: return "(bad opcode)";
  }
}

static void describe_status(int status, char *buf, size_t len) {
  if (WIFEXITED(status))
    snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else
    snprintf(buf, len, "wait status 0x%x", status);
}

/* In the parent of a pair: reap the child, giving it a moment to finish its own report. */
static void reap_child_on_failure(void) {
  if (g_child_pid <= 0) return;
  pid_t child = g_child_pid;
  g_child_pid = 0;
  int status = 0;
  for (int i = 0; i < 50; i++) { /* up to ~500 ms */
    pid_t r = waitpid(child, &status, WNOHANG);
    if (r == child) {
      char d[96];
      describe_status(status, d, sizeof d);
      fprintf(stderr, "[%s] (child %d %s)\n", g_label, (int)child, d);
      return;
    }
    if (r < 0) return;
    usleep(10000);
  }
  kill(child, SIGKILL);
  waitpid(child, &status, 0);
  fprintf(stderr, "[%s] (child %d was still running and has been killed)\n", g_label, (int)child);
}

static void vfail(const char *file, int line, const char *cond, const char *fmt, va_list ap) {
  fflush(stdout);
  fprintf(stderr, "[%s] %s:%d: FAIL: ", g_label, file, line);
  vfprintf(stderr, fmt, ap);
  if (cond) fprintf(stderr, "  [check: %s]", cond);
  fprintf(stderr, "  (phase: %s)\n", g_phase ? (const char *)g_phase : "?");
  fflush(stderr);
  reap_child_on_failure();
  fflush(stderr);
  _exit(1);
}

void ct_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(file, line, NULL, fmt, ap);
  va_end(ap);
  _exit(1);
}

void ct_fail_cond(const char *file, int line, const char *cond, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(file, line, cond, fmt, ap);
  va_end(ap);
  _exit(1);
}

void ct_note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("[%s] ", g_label);
  vprintf(fmt, ap);
  printf("\n");
  fflush(stdout);
  va_end(ap);
}

static void write_str(const char *s) {
  ssize_t r = write(2, s, strlen(s));
  (void)r;
}

static void on_alarm(int sig) {
  (void)sig;
  write_str("[");
  write_str(g_label);
  write_str("] FAIL: TIMEOUT (alarm) in phase: ");
  write_str(g_phase ? (const char *)g_phase : "?");
  if (g_waiting[0]) {
    write_str(", waiting at ");
    write_str(g_waiting);
  }
  write_str("\n");
  if (g_child_pid > 0) {
    kill(g_child_pid, SIGKILL);
  }
  _exit(3);
}

void ct_label_suffix(const char *suffix) {
  char base[sizeof g_label];
  memcpy(base, g_label, sizeof base);
  base[sizeof base - 1] = 0;
  snprintf(g_label, sizeof g_label, "%.40s%.20s", base, suffix);
}

void ct_waiting(const char *file, int line, const char *fmt, ...) {
  if (!file) {
    g_waiting[0] = 0;
    return;
  }
  snprintf(g_waiting, sizeof g_waiting, "%s:%d: %s", file, line, fmt);
}

void ct_init(const char *testname, unsigned alarm_seconds) {
  snprintf(g_label, sizeof g_label, "%s", testname);
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  g_alarm_secs = alarm_seconds;
  alarm(alarm_seconds);
}

double now_sec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double cpu_sec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sleep_ms(unsigned ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

long env_long(const char *name, long dflt) {
  const char *s = getenv(name);
  if (!s || !*s) return dflt;
  char *end = NULL;
  long v = strtol(s, &end, 0);
  if (end == s) return dflt;
  return v;
}

void poll_for_ms(eb_t eb, unsigned ms) {
  double end = now_sec() + ms / 1000.0;
  while (now_sec() < end) {
    AM_SAFE(AM_Poll(eb));
  }
}

const char *en_str(en_t name) {
  static char bufs[4][96];
  static int next = 0;
  char *b = bufs[next];
  next = (next + 1) % 4;
  int rc = ramp_enToString(name, b, sizeof bufs[0]);
  if (rc != AM_OK) snprintf(b, sizeof bufs[0], "(ramp_enToString: %s)", ct_errname(rc));
  return b;
}

/* ------------------------------------------------------------------------------------ */
/* two-process harness                                                                   */

tag_t pair_tag(int rank) {
  /* high bit set, both halves non-zero: a truncation to 32 bits would be noticed */
  return (tag_t)0x8BADF00D00000000ULL + (tag_t)0x10001ULL * (tag_t)(rank + 0x21);
}

void pair_fork(pair_t *p) {
  memset(p, 0, sizeof *p);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) FAIL("socketpair: %s", strerror(errno));
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) FAIL("fork: %s", strerror(errno));
  if (pid == 0) {
    close(sv[0]);
    p->rank = 1;
    p->fd = sv[1];
    p->child = 0;
    g_child_pid = 0;
    ct_label_suffix(" rank 1");
    alarm(g_alarm_secs); /* alarms are not inherited across fork */
  } else {
    close(sv[1]);
    p->rank = 0;
    p->fd = sv[0];
    p->child = pid;
    g_child_pid = pid;
    ct_label_suffix(" rank 0");
  }
  p->peer = 1 - p->rank;
  int fl = fcntl(p->fd, F_GETFL);
  if (fl < 0 || fcntl(p->fd, F_SETFL, fl | O_NONBLOCK) != 0) FAIL("fcntl: %s", strerror(errno));
}

void pair_exchange_eb(pair_t *p, eb_t eb, const void *mine, void *theirs, size_t n) {
  const char *out = (const char *)mine;
  char *in = (char *)theirs;
  size_t sent = 0, got = 0;
  unsigned idle = 0;
  while (sent < n || got < n) {
    int progress = 0;
    if (sent < n) {
      ssize_t w = write(p->fd, out + sent, n - sent);
      if (w > 0) {
        sent += (size_t)w;
        progress = 1;
      } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        FAIL("write to peer over socketpair: %s (peer exited?)", strerror(errno));
      }
    }
    if (got < n) {
      ssize_t r = read(p->fd, in + got, n - got);
      if (r > 0) {
        got += (size_t)r;
        progress = 1;
      } else if (r == 0) {
        FAIL("peer closed the socketpair (peer exited or failed)");
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        FAIL("read from peer over socketpair: %s", strerror(errno));
      }
    }
    if (!progress) {
      if (eb) {
        AM_SAFE(AM_Poll(eb));
      } else if (++idle > 100) {
        usleep(200);
      }
    }
  }
}

void pair_exchange(pair_t *p, const void *mine, void *theirs, size_t n) {
  pair_exchange_eb(p, p->ready ? p->eb : NULL, mine, theirs, n);
}

void pair_barrier_eb(pair_t *p, eb_t eb) {
  char a = 'b', b = 0;
  pair_exchange_eb(p, eb, &a, &b, 1);
  if (b != 'b') FAIL("barrier: protocol out of step with peer (got byte 0x%02x)", (unsigned char)b);
}

void pair_barrier(pair_t *p) {
  pair_barrier_eb(p, p->ready ? p->eb : NULL);
}

void pair_alloc(pair_t *p, int bundle_type, eb_t *eb, ep_t *ep, en_t names[2]) {
  AM_SAFE(AM_AllocateBundle(bundle_type, eb));
  AM_SAFE(AM_AllocateEndpoint(*eb, ep, &names[p->rank]));
  en_t mine = names[p->rank];
  pair_exchange_eb(p, NULL, &mine, &names[p->peer], sizeof(en_t));
}

void spawn_pair(pair_t *p, int bundle_type, int depth, pair_setup_fn setup, void *arg) {
  pair_fork(p);
  AM_SAFE(AM_Init());
  pair_alloc(p, bundle_type, &p->eb, &p->ep, p->name);
  p->tag[0] = pair_tag(0);
  p->tag[1] = pair_tag(1);
  AM_SAFE(AM_SetTag(p->ep, p->tag[p->rank]));
  AM_SAFE(AM_Map(p->ep, 0, p->name[0], p->tag[0]));
  AM_SAFE(AM_Map(p->ep, 1, p->name[1], p->tag[1]));
  AM_SAFE(AM_SetExpectedResources(p->ep, 2, depth));
  p->ready = 1;
  if (setup) setup(p, arg);
  pair_barrier(p);
}

static double env_double(const char *name) {
  const char *s = getenv(name);
  return (s && *s) ? strtod(s, NULL) : 0.0;
}

void pair_fault_report(pair_t *p) {
  ramp_stats_t st[2];
  AM_SAFE(ramp_GetEndpointStatistics(p->ep, &st[p->rank]));
  pair_exchange(p, &st[p->rank], &st[p->peer], sizeof(ramp_stats_t));
  if (p->rank != 0) return;
  uint64_t retrans = 0, dups = 0, sent = 0;
  for (int r = 0; r < 2; r++) {
    uint64_t rq = 0, rp = 0;
    for (int c = 0; c < 3; c++) {
      rq += st[r].RequestsRetransmitted[c];
      rp += st[r].RepliesRetransmitted[c];
    }
    ct_note("rank %d: packets sent %" PRIu64 " received %" PRIu64 " retransmitted %" PRIu64
            " (requests %" PRIu64 ", replies %" PRIu64 "), duplicates dropped %" PRIu64 ", nacks %" PRIu64
            "/%" PRIu64 ", stale %" PRIu64 ", corrupt %" PRIu64,
            r, st[r].PacketsSent, st[r].PacketsReceived, st[r].PacketsRetransmitted, rq, rp,
            st[r].DuplicatesDropped, st[r].NacksSent, st[r].NacksReceived, st[r].StaleDropped,
            st[r].CorruptDropped);
    retrans += st[r].PacketsRetransmitted;
    dups += st[r].DuplicatesDropped;
    sent += st[r].PacketsSent;
  }
  double loss = env_double("RAMP_FAULT_LOSS"), dup = env_double("RAMP_FAULT_DUP");
  if (loss > 0 && sent * loss >= 20)
    CHECK(retrans > 0, "RAMP_FAULT_LOSS=%g over %" PRIu64 " packets, but no packet was retransmitted: "
          "is fault injection active?", loss, sent);
  if (dup > 0 && sent * dup >= 20)
    CHECK(dups > 0, "RAMP_FAULT_DUP=%g over %" PRIu64 " packets, but no duplicate was dropped: "
          "is fault injection active?", dup, sent);
}

int pair_wait_child(pair_t *p) {
  int status = 0;
  if (p->rank != 0 || p->child <= 0) return 0;
  pid_t r;
  do {
    r = waitpid(p->child, &status, 0);
  } while (r < 0 && errno == EINTR);
  if (r < 0) FAIL("waitpid: %s", strerror(errno));
  p->child = 0;
  g_child_pid = 0;
  return status;
}

void pair_finish(pair_t *p, unsigned linger_ms) {
  PHASE("pair_finish");
  pair_barrier(p);
  if (p->ready && linger_ms) poll_for_ms(p->eb, linger_ms);
  pair_barrier(p);
  if (p->rank == 1) {
    AM_SAFE(AM_Terminate());
    fflush(stdout);
    fflush(stderr);
    _exit(0);
  }
  AM_SAFE(AM_Terminate());
  p->ready = 0;
  int status = pair_wait_child(p);
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    char d[96];
    describe_status(status, d, sizeof d);
    FAIL("child %s", d);
  }
  close(p->fd);
}
