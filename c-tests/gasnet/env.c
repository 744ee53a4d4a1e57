/*
 * env.c -- a 2-rank job (master form: ./env 2) that starts, checks its size and rank,
 * reads one variable through AMUDP_SPMDgetenvMaster (as GASNet's gasneti_getenv_hook
 * does), and exits; c-tests/gasnet/run.sh runs it under GASNET_* / AMUDP_* settings and
 * checks that each is honoured or refused by name.  Prints "env: rank R ok <value of
 * ENV_PROBE at the master>".
 */
#include <stdio.h>
#include "amudp_spmd.h"

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  if (AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep) != AM_OK) {
    fprintf(stderr, "FAILED CHECK: AMUDP_SPMDStartup\n");
    return 1;
  }
  if (AMUDP_SPMDNumProcs() != 2 || AMUDP_SPMDBarrier() != AM_OK) {
    fprintf(stderr, "FAILED CHECK: size or barrier\n");
    AMUDP_SPMDExit(1);
  }
  const char *probe = AMUDP_SPMDgetenvMaster("ENV_PROBE");
  printf("env: rank %d ok %s\n", AMUDP_SPMDMyProc(), probe ? probe : "(unset)");
  fflush(stdout);
  AMUDP_SPMDExit(0);
  return 0;
}
