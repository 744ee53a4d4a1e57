/*
 * testoutput -- no AM traffic apart from barriers: every rank writes iters lines of
 * varying width to stdout, then an unterminated 4-character tail "<RR|" before the
 * Barrier and another one "|RR>" before AMX_SPMDExit (RR: rank, two digits).  Checks the
 * routing of worker output and the final flush.
 * Line format: "testoutput rank R line I: " + filler + "#"
 * Usage: testoutput iters [maxwidth=80] [L]
 *   L: line-buffered stdout (for launchers that forward raw chunks of each process's
 *      output, e.g. mpiexec, where a fully buffered stdout gets cut in mid-line)
 */
#include "apputils.h"

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  uint64_t networkpid;
  int myproc, numprocs, iters, maxwidth = 80, i;

  TEST_STARTUP(argc, argv, networkpid, eb, ep, 1, 3, "iterations [maxwidth] [L]");
  myproc = AMX_SPMDMyProc();
  numprocs = AMX_SPMDNumProcs();
  iters = atoi(argv[1]);
  if (iters < 1) iters = 1;
  if (argc > 2) maxwidth = atoi(argv[2]);
  if (maxwidth < 40) maxwidth = 40;
  if (argc > 3 && (argv[3][0] == 'L' || argv[3][0] == 'l')) setvbuf(stdout, NULL, _IOLBF, 0);
  setupUtilHandlers(ep, eb);
  AM_Safe(AMX_SPMDBarrier());

  for (i = 0; i < iters; i++) {
    char line[4096];
    int n = snprintf(line, sizeof(line), "testoutput rank %i line %i: ", myproc, i);
    int width = (maxwidth - n - 1) > 0 ? (i * 7 + myproc * 3) % (maxwidth - n) : 0;
    int j;
    if (width > (int)sizeof(line) - n - 3) width = (int)sizeof(line) - n - 3;
    for (j = 0; j < width; j++) line[n + j] = (char)('a' + (myproc + i + j) % 26);
    line[n + width] = '#';
    line[n + width + 1] = '\0';
    printf("%s\n", line);
  }
  printf("<%02d|", myproc);   /* unterminated, before Barrier */

  AM_Safe(AMX_SPMDBarrier());
  if (myproc == 0) {
    fprintf(stderr, "testoutput: procs=%i iters=%i maxwidth=%i lines_written=%i\n", numprocs,
            iters, maxwidth, iters * numprocs);
    fflush(stderr);
  }
  printGlobalStats();
  AM_Safe(AMX_SPMDBarrier());
  printf("|%02d>", myproc);   /* unterminated, before Exit */
  AMX_SPMDExit(0);
  return 0;
}
