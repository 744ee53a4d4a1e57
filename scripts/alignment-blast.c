/* alignment-blast.c -- a C blast of 65,507-byte UDP datagrams on loopback, used by
 * scripts/recv-alignment.sh and scripts/send-alignment.sh.  Sender pinned to CPU 0, each
 * datagram gathered from 3 pieces as ramp gathers a long fragment (a header of HEADER
 * bytes at a page, the payload from page + SRC, a 4-byte trailer); receiver pinned to
 * CPU 1, recvmmsg of 16 into slots at page + OFFSET; window 64.
 *   alignment-blast DATAGRAMS OFFSET [HEADER=68 [SRC=68]]
 */
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
    long n = atol(argv[1]); int off = atoi(argv[2]);
    int H = argc > 3 ? atoi(argv[3]) : 68, so = argc > 4 ? atoi(argv[4]) : 68;
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
    char *src = aligned_alloc(4096, DG + 4096); memset(src, 2, DG + 4096);
    /* header piece at the page, payload piece from page + SO (contents do not matter) */
    struct iovec iv[3] = {{src, H}, {src + so, DG - H - 4}, {src + DG - 4, 4}};
    struct msghdr mh = {.msg_name = &ra, .msg_namelen = sizeof ra, .msg_iov = iv, .msg_iovlen = 3};
    struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);
    long sent = 0, acked = 0; char c;
    while (sent < n) {
        while (recv(as, &c, 1, 0) > 0) acked++;
        if (sent - acked * 8 < 64 && sendmsg(ss, &mh, 0) > 0) sent++;
    }
    wait(0); clock_gettime(CLOCK_MONOTONIC, &t1);
    double t = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("receive slot at line + %2d, header %3d B, payload source at line + %2d: %6.0f MiB/s\n", off, H, so % 64, (double)n * DG / t / 1048576);
    return 0;
}
