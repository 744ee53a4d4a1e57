#!/bin/bash
# How fast a sender pushes 65,507-byte UDP datagrams on loopback by the
# alignment of the payload it gathers, relative to where that payload lands
# in the datagram: a C blast (sender pinned to CPU 0, each datagram gathered
# from a header piece of HEADER bytes, the payload from page + SRC, a 4-byte
# trailer, as ramp sends a long fragment; receiver pinned to CPU 1, recvmmsg
# of 16 into page-aligned slots; window 64). The sender's kernel copy
# (_copy_from_iter) is the largest cost of a UDP Xfer's sending end (37% of
# its time in a perf profile of GASNet's testbulk over ramp, 65,000 bytes).
#
# On this project's Zen 4 (stop 23), fast when (SRC - HEADER) mod 32 == 0,
# in the host's fast state: header 64, 96 or 128 with the payload on a line
# ~5.3 GB/s, header 72 (an Xfer of 1 argument: 68 + 4) with the payload at
# line + 8 ~5.26, header 68, 72, 76 or 80 with the payload on a line
# 4.8-5.0; in its slow state (medians of 4 alternated rounds): 64:0 1,801,
# 72:8 1,806, 96:0 1,809 against 72:0 1,680 and 72:16 1,553 MiB/s. ramp's
# kept payload buffers come from malloc (16-byte aligned, any line offset),
# so a long fragment is sent at either speed, by chance of its buffer.
#
# usage: scripts/send-alignment.sh [DATAGRAMS] [HEADER:SRC...]
set -euo pipefail
n=${1:-20000}
shift || true
cases=${*:-64:0 72:0 72:8 72:16 96:0 128:0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/blast.c" <<'C'
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#define DG 65507
static void pin(int c) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(c, &s); sched_setaffinity(0, sizeof s, &s); }
static int bound(struct sockaddr_in *a) {
    int s = socket(AF_INET, SOCK_DGRAM, 0), big = 8 << 20;
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    *a = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t l = sizeof *a;
    if (bind(s, (void *)a, l) || getsockname(s, (void *)a, &l)) { perror("bind"); exit(1); }
    return s;
}
int main(int argc, char **argv) {
    long n = atol(argv[1]); int off = 0, H = atoi(argv[2]), so = atoi(argv[3]);
    struct sockaddr_in ra, aa;
    int rs = bound(&ra), as = bound(&aa), ss = socket(AF_INET, SOCK_DGRAM, 0);
    if (fork() == 0) {  /* receiver: acks its count every 8 datagrams */
        pin(1);
        char *slots = aligned_alloc(4096, 16 * 65536 + 4096);
        memset(slots, 1, 16 * 65536 + 4096);
        struct mmsghdr mm[16]; struct iovec iv[16]; long got = 0, acked = 0;
        while (got < n) {
            for (int i = 0; i < 16; i++) {
                iv[i] = (struct iovec){slots + i * 65536 + off, 65536};
                memset(&mm[i].msg_hdr, 0, sizeof mm[i].msg_hdr);
                mm[i].msg_hdr.msg_iov = &iv[i]; mm[i].msg_hdr.msg_iovlen = 1;
            }
            int r = recvmmsg(rs, mm, 16, MSG_DONTWAIT, 0);
            if (r > 0) got += r;
            if (got / 8 > acked) { acked = got / 8; char c = 0; sendto(as, &c, 1, 0, (void *)&aa, sizeof aa); }
        }
        _exit(0);
    }
    pin(0);
    fcntl(as, F_SETFL, O_NONBLOCK);
    char *src = aligned_alloc(4096, DG + 8192); memset(src, 2, DG + 8192);
    /* header piece, payload piece at page + SRC, trailer: as ramp gathers a fragment */
    struct iovec iv[3] = {{src, H}, {src + 4096 + so, DG - H - 4}, {src + DG - 4, 4}};
    struct msghdr mh = {.msg_name = &ra, .msg_namelen = sizeof ra, .msg_iov = iv, .msg_iovlen = 3};
    struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);
    long sent = 0, acked = 0; char c;
    while (sent < n) {
        while (recv(as, &c, 1, 0) > 0) acked++;
        if (sent - acked * 8 < 64 && sendmsg(ss, &mh, 0) > 0) sent++;
    }
    wait(0); clock_gettime(CLOCK_MONOTONIC, &t1);
    double t = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("header %3d B, payload source at line + %2d: %6.0f MiB/s\n", H, so, (double)n * DG / t / 1048576);
    return 0;
}
C
"${CC:-cc}" -O2 -o "$tmp/blast" "$tmp/blast.c"
for hc in $cases; do "$tmp/blast" "$n" "${hc%%:*}" "${hc##*:}"; done
