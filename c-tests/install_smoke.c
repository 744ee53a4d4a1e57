/* install_smoke: the smallest program built against an INSTALLED ramp (used by
 * scripts/test-install.sh, not by c-tests/run.sh), exactly as a user builds one:
 *
 *     cc app.c $(pkg-config --cflags --libs ramp)
 *
 * It initialises the layer, allocates a bundle and an endpoint, prints the library
 * version and the endpoint's name, checks that the RAMP_VERSION* macros of the installed
 * header agree with the version of the library that was loaded (and with argv[1], the
 * version in Cargo.toml, when given), and terminates.  Exit status 0 on success.
 */
#include <stdio.h>
#include <string.h>

#include "am.h"
#include "ramp.h"

static int failures;

#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "install_smoke: FAIL: " __VA_ARGS__); \
      fputc('\n', stderr);                                \
      failures++;                                         \
    }                                                     \
  } while (0)

#define CALL(call)                                                                 \
  do {                                                                             \
    int rc_ = (call);                                                              \
    if (rc_ != AM_OK) {                                                            \
      fprintf(stderr, "install_smoke: FAIL: %s returned %d (%s)\n", #call, rc_,     \
              ramp_ErrorName(rc_));                                                \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

int main(int argc, char **argv) {
  const char *runtime = ramp_Version();
  CHECK(runtime != NULL, "ramp_Version() returned NULL");
  if (runtime == NULL) return 1;
  printf("ramp_Version(): %s\n", runtime);
  printf("RAMP_VERSION_STRING: %s (RAMP_VERSION %d, ABI %d)\n", RAMP_VERSION_STRING,
         RAMP_VERSION, RAMP_ABI_VERSION);

  char macros[64];
  snprintf(macros, sizeof macros, "%d.%d.%d", RAMP_VERSION_MAJOR, RAMP_VERSION_MINOR,
           RAMP_VERSION_PATCH);
  CHECK(strcmp(macros, RAMP_VERSION_STRING) == 0,
        "RAMP_VERSION_MAJOR/MINOR/PATCH give %s but RAMP_VERSION_STRING is %s", macros,
        RAMP_VERSION_STRING);
  CHECK(RAMP_VERSION ==
            RAMP_VERSION_MAJOR * 10000 + RAMP_VERSION_MINOR * 100 + RAMP_VERSION_PATCH,
        "RAMP_VERSION is %d", RAMP_VERSION);
  CHECK(strcmp(runtime, RAMP_VERSION_STRING) == 0,
        "the library says version %s but the header says %s", runtime, RAMP_VERSION_STRING);
  if (argc > 1) {
    CHECK(strcmp(runtime, argv[1]) == 0, "the library says version %s, expected %s", runtime,
          argv[1]);
  }

  CALL(AM_Init());
  eb_t bundle;
  ep_t ep;
  en_t name;
  CALL(AM_AllocateBundle(AM_SEQ, &bundle));
  CALL(AM_AllocateEndpoint(bundle, &ep, &name));
  char buf[128];
  CALL(ramp_enToString(name, buf, sizeof buf));
  CHECK(buf[0] != '\0', "ramp_enToString gave an empty name");
  printf("endpoint: %s\n", buf);
  CALL(AM_Terminate());

  if (failures) {
    fprintf(stderr, "install_smoke: %d check(s) failed\n", failures);
    return 1;
  }
  printf("install_smoke: OK\n");
  return 0;
}
