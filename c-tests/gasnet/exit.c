/*
 * exit.c -- how a job ends when one rank leaves it (GASNet's testexit cases), a 3-rank
 * job: ./exit 3 MODE.  After a barrier, rank 1
 *   MODE=code   calls AMUDP_SPMDExit(7);
 *   MODE=segv   raises SIGSEGV (a crash);
 *   MODE=kill   raises SIGKILL;
 * while ranks 0 and 2 compute without ever calling ramp again.  They must be ended
 * quietly by the job (AMUDP: the master tells them), not by a signal: their exit
 * callback runs (printing "exit: rank R callback C") and they end through
 * AMUDP_SPMDkillmyprocess.  c-tests/gasnet/run.sh checks the job's exit code (7 for
 * code; 255, AMUDP's, for a crash under the master form) and the callbacks.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "amudp_spmd.h"

static int me;
static void on_exit_cb(int code) {
  printf("exit: rank %d callback %d\n", me, code);
  fflush(stdout);
}

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  if (AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep) != AM_OK) return 1;
  me = AMUDP_SPMDMyProc();
  const char *mode = argc > 1 ? argv[1] : "code";
  AMUDP_SPMDSetExitCallback(on_exit_cb);
  AMUDP_SPMDBarrier();
  if (me == 1) {
    if (!strcmp(mode, "code")) AMUDP_SPMDExit(7);
    if (!strcmp(mode, "segv")) raise(SIGSEGV);
    if (!strcmp(mode, "kill")) raise(SIGKILL);
    fprintf(stderr, "FAILED CHECK: unknown mode %s\n", mode);
    AMUDP_SPMDExit(1);
  }
  /* compute, never calling ramp: the watchdog of run.sh ends a hang */
  volatile unsigned long x = 0;
  for (;;) x++;
  return 0;
}
