/*
 * spawnfn.c -- a program's own spawn function passed to AMUDP_SPMDStartup (AMUDP: "you
 * can always write your own"): ./spawnfn 2.  The master must call it with the workers'
 * argv and extra_env; it forks and execs them itself (marking each with
 * SPAWNFN_CALLED=1), and the job runs.  Also checks that a spawn function returning 0
 * fails the start-up (./spawnfn 2 refuse).  Prints "spawnfn: rank R ok called=1".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "amudp_spmd.h"

static int calls;

static int my_spawn(int nproc, int argc, char **argv, char **extra_env) {
  int i, j;
  calls++;
  if (argc < 1 || argv[argc] != NULL) return 0;
  if (argc > 1 && !strcmp(argv[argc - 1], "refuse")) return 0;
  for (i = 0; i < nproc; i++) {
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
      for (j = 0; extra_env && extra_env[j]; j++) putenv(extra_env[j]);
      setenv("SPAWNFN_CALLED", "1", 1);
      execv(argv[0], argv);
      _exit(127);
    }
  }
  return 1;
}

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  if (AMUDP_SPMDStartup(&argc, &argv, 0, 0, my_spawn, NULL, &eb, &ep) != AM_OK) {
    fprintf(stderr, "spawnfn: start-up failed (spawn function called %d time(s))\n", calls);
    return 3;
  }
  const char *called = getenv("SPAWNFN_CALLED");
  if (AMUDP_SPMDNumProcs() != 2 || AMUDP_SPMDBarrier() != AM_OK) {
    fprintf(stderr, "FAILED CHECK: size or barrier\n");
    AMUDP_SPMDExit(1);
  }
  printf("spawnfn: rank %d ok called=%s\n", AMUDP_SPMDMyProc(), called ? called : "0");
  fflush(stdout);
  AMUDP_SPMDExit(0);
  return 0;
}
