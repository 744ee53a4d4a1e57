#!/usr/bin/env bash
# GASNet udp-conduit compatibility checks (issue 41), without GASNet itself: what the
# conduit needs from ramp's AMUDP drop-in, each checked as GASNet uses it.
#
# Usage: bash c-tests/gasnet/run.sh [--lib-dir DIR] [--only NAME[,NAME...]]
#   --lib-dir DIR  directory holding libramp.so (default: target/release)
#   --only         run only these checks: const, callbacks, env, symbols, stats, exit,
#                  spawn
#
# Checks (each prints PASS/FAIL/SKIPPED lines):
#   const      const_asserts.c: <amudp_const.h> alone and with the other headers, in C11
#              and C++ with -Wall -Wextra -Werror -pedantic: gasnet_core.c's static
#              asserts hold and every limit is an integer constant expression
#   callbacks  callbacks.c, 2 ranks: AMUDP_SetHandlerCallbacks' functions run at every
#              handler's entry and exit with the message's category, request/reply flag,
#              handler, arguments and payload
#   env        env.c under the master form: every GASNET_* name AMUDP reads is honoured
#              (and shown by its RAMP_* name's effect) or refused with a message naming it
#   symbols    nm -D of libramp.so holds every AMUDP_*/AMX_*/AM_* symbol an object built
#              against AMUDP's own headers links to (GASNet's udp-conduit and AMX tests),
#              and such an object (symbols.c, built with AMUDP's prototypes) links and runs
#   stats      stats.c, 2 ranks: a known exchange's short/medium/long requests sent equal
#              the replies sent and the requests received, on every rank
#   exit       exit.c: a rank's exit(code) ends the job with that code and the other
#              ranks quietly (their exit callback runs, no signal); a crashed rank ends
#              the job with 255 (AMUDP's code)
#   spawn      'C' (GASNET_CSPAWN_CMD with %N %C %D %P %%) and 'S' (ssh to localhost;
#              SKIPPED, counted, when no ssh server can be reached) spawners run a job
# Prints "gasnet compat: N passed, M failed, K skipped"; exit status 1 on any failure.
# Logs: c-tests/build/gasnet.*.log.
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 2

LIB_DIR="target/release"
ONLY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --lib-dir) LIB_DIR="${2:?--lib-dir needs a directory}"; shift 2 ;;
    --only) ONLY="${2:?--only needs a name}"; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gasnet/run.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
LIB_DIR="$(cd "$LIB_DIR" 2>/dev/null && pwd)" || { echo "gasnet/run.sh: no such directory" >&2; exit 2; }
[ -e "$LIB_DIR/libramp.so" ] || { echo "gasnet/run.sh: $LIB_DIR/libramp.so not found (cargo build --release)" >&2; exit 2; }
[ -e "$LIB_DIR/libramp.so.0" ] || ln -sf libramp.so "$LIB_DIR/libramp.so.0"

CC="${CC:-gcc}"
CXX="${CXX:-g++}"
BUILD="$ROOT/c-tests/build"
mkdir -p "$BUILD"
SRC="c-tests/gasnet"
WARN="-Wall -Wextra -Werror"
# A watchdog for a hang, not a speed limit.
LIMIT=120
PASSED=0 FAILED=0 SKIPPED=0

selected() {
  [ -z "$ONLY" ] && return 0
  case ",$ONLY," in *",$1,"*) return 0 ;; esac
  return 1
}
result() { # result RC LABEL LOG
  if [ "$1" = 0 ]; then
    printf 'PASS %s\n' "$2"; PASSED=$((PASSED + 1))
  else
    printf 'FAIL %s\n' "$2"; FAILED=$((FAILED + 1))
    [ -s "$3" ] && tail -n 30 "$3" | sed 's/^/    | /'
  fi
}
skipped() { printf 'SKIPPED %s: %s\n' "$1" "$2"; SKIPPED=$((SKIPPED + 1)); }
# build NAME: c-tests/gasnet/NAME.c -> $BUILD/gasnet.NAME (as a user's program)
build() {
  "$CC" -std=c11 $WARN -D_GNU_SOURCE -Iinclude -o "$BUILD/gasnet.$1" "$SRC/$1.c" \
    -L"$LIB_DIR" -lramp -Wl,-rpath,"$LIB_DIR" >"$BUILD/gasnet.$1.build.log" 2>&1 ||
    { result 1 "$1 (build)" "$BUILD/gasnet.$1.build.log"; return 1; }
}

# ---- const ----------------------------------------------------------------------------
if selected const; then
  for order in 0 1 2; do
    for lang in c c++; do
      log="$BUILD/gasnet.const.$order.$lang.log"
      if [ $lang = c ]; then cmd=("$CC" -std=c11); else cmd=("$CXX" -x c++ -std=c++17); fi
      "${cmd[@]}" $WARN -pedantic -Iinclude -DORDER=$order -c "$SRC/const_asserts.c" \
        -o "$BUILD/gasnet.const.$order.$lang.o" >"$log" 2>&1
      result $? "const: GASNet's static asserts, $lang, header order $order" "$log"
    done
  done
fi

# run LABEL LOG CMD...: runs a job under the watchdog; status in RC
run() {
  local label="$1" log="$2"
  shift 2
  timeout -k 5 "$LIMIT" "$@" >"$log" 2>&1
  RC=$?
  [ $RC -eq 124 ] && echo "gasnet/run.sh: $label killed by the ${LIMIT}s watchdog" >>"$log"
  return 0
}

# ---- callbacks ------------------------------------------------------------------------
if selected callbacks && build callbacks; then
  for transport in shm udp; do
    log="$BUILD/gasnet.callbacks.$transport.log"
    run callbacks "$log" env RAMP_TRANSPORT=$transport "$BUILD/gasnet.callbacks" 2
    rc=$RC
    [ $rc = 0 ] && [ "$(grep -c '^callbacks: rank [01] ok$' "$log")" = 2 ] && ! grep -q "FAILED CHECK" "$log" || rc=1
    result $rc "callbacks: pre/post handler callbacks with each message's category ($transport)" "$log"
  done
fi

# ---- env ------------------------------------------------------------------------------
if selected env && build env; then
  E="$BUILD/gasnet.env"
  ok2() { [ "$RC" = 0 ] && [ "$(grep -c '^env: rank [01] ok' "$1")" = 2 ]; }
  # honoured: a whole job under GASNet's own settings for a local run
  log="$BUILD/gasnet.env.honoured.log"
  run env "$log" env GASNET_SPAWNFN=L GASNET_MASTERIP=127.0.0.1 GASNET_NETWORKDEPTH=8 \
    GASNET_ROUTE_OUTPUT=1 GASNET_VERBOSEENV=1 AMUDP_RECVDEPTH=64 GASNET_REQUESTTIMEOUT_MAX=30000000 \
    GASNET_REQUESTTIMEOUT_INITIAL=20000 ENV_PROBE=seen "$E" 2
  rc=1
  ok2 "$log" && grep -q '^env: rank 1 ok seen$' "$log" &&
    grep -q "ramp: master: starting 2 worker(s) with spawner Local ('L').*reach the master at 127.0.0.1" "$log" && rc=0
  result $rc "env: GASNET_SPAWNFN, _MASTERIP, _NETWORKDEPTH, _ROUTE_OUTPUT, _VERBOSEENV, _REQUESTTIMEOUT_*, AMUDP_RECVDEPTH honoured" "$log"
  # a bad value of an honoured name: refused naming it as it was set
  for kv in GASNET_NETWORKDEPTH=lots AMUDP_NETWORKDEPTH=lots GASNET_MASTERIP=not-an-ip \
            GASNET_REQUESTTIMEOUT_MAX=0 GASNET_ROUTE_OUTPUT=maybe GASNET_RECVDEPTH=-3; do
    log="$BUILD/gasnet.env.bad.${kv%%=*}.log"
    run env "$log" env "$kv" "$E" 2
    rc=1
    [ "$RC" != 0 ] && grep -qF "${kv%%=*}=\"${kv#*=}\": expected" "$log" && ! grep -q '^env: rank' "$log" && rc=0
    result $rc "env: $kv refused by name" "$log"
  done
  # names ramp does not support: refused by name with what to use instead
  for name in WORKERIP LINEBUFFERSZ REQUESTTIMEOUT_BACKOFF SENDDEPTH EXPECTED_BANDWIDTH; do
    for prefix in GASNET_ AMUDP_; do
      log="$BUILD/gasnet.env.refused.$prefix$name.log"
      run env "$log" env "$prefix$name=4" "$E" 2
      rc=1
      [ "$RC" != 0 ] && grep -qF "$prefix$name=\"4\": not supported by ramp (refused: " "$log" && rc=0
      result $rc "env: $prefix$name refused by name" "$log"
    done
  done
fi

# ---- symbols --------------------------------------------------------------------------
if selected symbols; then
  log="$BUILD/gasnet.symbols.nm.log"
  nm -D --defined-only "$LIB_DIR/libramp.so" >"$BUILD/gasnet.nm.txt" 2>"$log"
  missing=0
  while read -r kind name _; do
    case "$kind" in ''|'#'*) continue ;; esac
    got="$(awk -v n="$name" '$3 == n { print $2 }' "$BUILD/gasnet.nm.txt" | head -n 1)"
    case "$kind:$got" in
      T:T|D:D|D:B|D:R|D:V) ;;
      *) echo "$name: want $kind, nm -D shows '${got:-nothing}'" >>"$log"; missing=$((missing + 1)) ;;
    esac
  done <"$SRC/amudp_symbols.txt"
  n="$(grep -c '^[TD] ' "$SRC/amudp_symbols.txt")"
  result $missing "symbols: nm -D libramp.so exports all $n names of amudp_symbols.txt with their kind" "$log"
  # an object built with AMUDP's own declarations (no ramp header) links and runs
  log="$BUILD/gasnet.symbols.build.log"
  if "$CC" -std=c11 $WARN -o "$BUILD/gasnet.symbols" "$SRC/symbols.c" \
       -L"$LIB_DIR" -lramp -Wl,-rpath,"$LIB_DIR" >"$log" 2>&1; then
    for transport in shm udp; do
      log="$BUILD/gasnet.symbols.$transport.log"
      run symbols "$log" env RAMP_TRANSPORT=$transport SYMBOLS_PROBE=from-master "$BUILD/gasnet.symbols" 2
      rc=$RC
      [ $rc = 0 ] && [ "$(grep -c '^symbols: rank [01] ok$' "$log")" = 2 ] && ! grep -q "FAILED CHECK" "$log" || rc=1
      result $rc "symbols: an object built against AMUDP's declarations links with -lramp and runs ($transport)" "$log"
    done
  else
    result 1 "symbols: an object built against AMUDP's declarations links with -lramp" "$log"
  fi
fi

# ---- stats ----------------------------------------------------------------------------
if selected stats && build stats; then
  for transport in shm udp; do
    log="$BUILD/gasnet.stats.$transport.log"
    run stats "$log" env RAMP_TRANSPORT=$transport "$BUILD/gasnet.stats" 2
    rc=$RC
    [ $rc = 0 ] && grep -q '^stats: ok$' "$log" && ! grep -q "FAILED CHECK" "$log" || rc=1
    result $rc "stats: requests sent = received, replies sent (automatic as short) = received = requests ($transport)" "$log"
  done
fi

# ---- exit -----------------------------------------------------------------------------
if selected exit && build exit; then
  # exit_case LAUNCHER MODE WANT_CODE WANT_CALLBACK_CODE
  exit_case() {
    local launcher="$1" mode="$2" want="$3" cb="$4" log rc
    log="$BUILD/gasnet.exit.$launcher.$mode.log"
    if [ "$launcher" = master ]; then
      run exit "$log" "$BUILD/gasnet.exit" 3 "$mode"
    else
      run exit "$log" "$LIB_DIR/ramp-run" -n 3 "$BUILD/gasnet.exit" "$mode"
    fi
    rc=1
    if [ "$RC" = "$want" ] && grep -q "^exit: rank 0 callback $cb\$" "$log" &&
       grep -q "^exit: rank 2 callback $cb\$" "$log" &&
       { [ "$mode" = code ] && grep -q "^exit: rank 1 callback 7\$" "$log" || ! grep -q "^exit: rank 1 callback" "$log"; } &&
       ! grep -qi "SIGTERM\|signal 15" "$log"; then
      rc=0
    else
      echo "gasnet/run.sh: exit code $RC (want $want); want both other ranks' callbacks with $cb, no SIGTERM" >>"$log"
    fi
    result $rc "exit: $launcher, rank 1 $mode: job exits $want, the others end quietly (callback $cb)" "$log"
  }
  exit_case master code 7 0
  exit_case master segv 255 255
  exit_case master kill 255 255
  if [ -x "$LIB_DIR/ramp-run" ]; then
    exit_case ramp-run code 7 0
    exit_case ramp-run segv 139 139
  else
    skipped "exit: ramp-run" "$LIB_DIR/ramp-run not built"
  fi
fi

# ---- spawn ----------------------------------------------------------------------------
if selected spawn && build env && build spawnfn; then
  E="$BUILD/gasnet.env"
  # 'C': a custom command that runs the %N workers here, in %D
  log="$BUILD/gasnet.spawn.C.log"
  run spawn "$log" env GASNET_SPAWNFN=C ENV_PROBE=custom \
    GASNET_CSPAWN_CMD='cd %D && test -x %P && for i in $(seq %N); do %C & done; wait; echo 100%%' "$E" 2
  rc=1
  [ "$RC" = 0 ] && [ "$(grep -c '^env: rank [01] ok custom$' "$log")" = 2 ] && grep -q '^100%$' "$log" && rc=0
  result $rc "spawn: 'C' with GASNET_CSPAWN_CMD (%N %C %D %P %%) runs a 2-rank job" "$log"
  # the letter on the command line, AMUDP_ names, %M with CSPAWN_SERVERS
  log="$BUILD/gasnet.spawn.C2.log"
  run spawn "$log" env AMUDP_CSPAWN_SERVERS="hostA,hostB,hostC" ENV_PROBE=letter \
    AMUDP_CSPAWN_CMD='echo servers: %M; for i in $(seq %n); do %c & done; wait' "$E" 2 C
  rc=1
  [ "$RC" = 0 ] && [ "$(grep -c '^env: rank [01] ok letter$' "$log")" = 2 ] && grep -q '^servers: hostA hostB$' "$log" && rc=0
  result $rc "spawn: 'C' as argv letter, AMUDP_CSPAWN_CMD, %M = first 2 of AMUDP_CSPAWN_SERVERS" "$log"
  # a failing custom command fails the job, naming it
  log="$BUILD/gasnet.spawn.Cfail.log"
  run spawn "$log" env GASNET_SPAWNFN=C GASNET_CSPAWN_CMD='exit 3' "$E" 2
  rc=1
  [ "$RC" != 0 ] && [ "$RC" != 124 ] && grep -q "spawner's process .* exited with code 3 before every worker joined" "$log" && rc=0
  result $rc "spawn: 'C' whose command fails stops the job with a message" "$log"
  log="$BUILD/gasnet.spawn.Cnone.log"
  run spawn "$log" env GASNET_SPAWNFN=C "$E" 2
  rc=1
  [ "$RC" != 0 ] && grep -q "needs GASNET_CSPAWN_CMD" "$log" && rc=0
  result $rc "spawn: 'C' without GASNET_CSPAWN_CMD is refused naming it" "$log"
  # the program's own spawn function is called (and its failure fails start-up)
  log="$BUILD/gasnet.spawn.fn.log"
  run spawn "$log" "$BUILD/gasnet.spawnfn" 2
  rc=1
  [ "$RC" = 0 ] && [ "$(grep -c '^spawnfn: rank [01] ok called=1$' "$log")" = 2 ] && rc=0
  result $rc "spawn: the program's own spawn function is called with argv and extra_env" "$log"
  log="$BUILD/gasnet.spawn.fnfail.log"
  run spawn "$log" "$BUILD/gasnet.spawnfn" 2 refuse
  rc=1
  [ "$RC" != 0 ] && grep -q "spawn function returned 0" "$log" && rc=0
  result $rc "spawn: a spawn function returning 0 fails the job" "$log"
  # 'S': ssh to this host, through an sshd of our own on a private port
  SSHD=/usr/sbin/sshd
  if [ ! -x "$SSHD" ] || ! command -v ssh >/dev/null || ! command -v ssh-keygen >/dev/null; then
    skipped "spawn: 'S' (ssh)" "no $SSHD / ssh / ssh-keygen (Debian: apt-get install openssh-server openssh-client)"
  else
    SD="$(mktemp -d)"
    SSHD_PID=""
    stop_sshd() { [ -n "$SSHD_PID" ] && kill "$SSHD_PID" 2>/dev/null && wait "$SSHD_PID" 2>/dev/null; rm -rf "$SD"; }
    trap stop_sshd EXIT
    ssh-keygen -q -t ed25519 -N '' -f "$SD/host_key" && ssh-keygen -q -t ed25519 -N '' -f "$SD/id" &&
      cp "$SD/id.pub" "$SD/authorized_keys" && chmod 600 "$SD/authorized_keys"
    PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    cat >"$SD/sshd_config" <<CONF
Port $PORT
ListenAddress 127.0.0.1
HostKey $SD/host_key
AuthorizedKeysFile $SD/authorized_keys
PidFile $SD/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
PermitUserEnvironment no
CONF
    [ "$(id -u)" = 0 ] && mkdir -p /run/sshd 2>/dev/null
    "$SSHD" -D -e -f "$SD/sshd_config" >"$SD/sshd.log" 2>&1 &
    SSHD_PID=$!
    OPTS="-p $PORT -i $SD/id -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5"
    ok=0
    # wait for our sshd to answer: a readiness poll bounded by a watchdog
    # (60 s), not a guess of how fast it starts; it gives up at once if
    # sshd exited (then the check is skipped and counted, with its log)
    for _ in $(seq 120); do
      # shellcheck disable=SC2086
      if ssh $OPTS -o BatchMode=yes -o StrictHostKeyChecking=no 127.0.0.1 true </dev/null >/dev/null 2>&1; then ok=1; break; fi
      kill -0 "$SSHD_PID" 2>/dev/null || break
      sleep 0.5
    done
    if [ $ok = 0 ]; then
      skipped "spawn: 'S' (ssh)" "cannot ssh to an sshd of our own on 127.0.0.1:$PORT ($(tail -n 1 "$SD/sshd.log" 2>/dev/null))"
    else
      log="$BUILD/gasnet.spawn.S.log"
      run spawn "$log" env GASNET_SPAWNFN=S GASNET_SSH_SERVERS="127.0.0.1 127.0.0.1" \
        GASNET_SSH_OPTIONS="$OPTS" ENV_PROBE=ssh "$E" 2
      rc=1
      [ "$RC" = 0 ] && [ "$(grep -c '^env: rank [01] ok ssh$' "$log")" = 2 ] && rc=0
      result $rc "spawn: 'S' over ssh to localhost (GASNET_SSH_SERVERS, GASNET_SSH_OPTIONS) runs a 2-rank job" "$log"
      log="$BUILD/gasnet.spawn.S1.log"
      run spawn "$log" env GASNET_SPAWNFN=S GASNET_SSH_SERVERS="127.0.0.1" GASNET_SSH_OPTIONS="$OPTS" "$E" 2
      rc=1
      [ "$RC" != 0 ] && grep -q "2 workers but only 1 server(s) in SSH_SERVERS" "$log" && rc=0
      result $rc "spawn: 'S' with fewer servers than ranks is refused" "$log"
    fi
    stop_sshd
    SSHD_PID=""
    trap - EXIT
  fi
fi

echo "gasnet compat: $PASSED passed, $FAILED failed, $SKIPPED skipped"
[ "$FAILED" -eq 0 ]
