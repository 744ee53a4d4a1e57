/* udp-floor.c -- the floor under a one-way bulk stream over loopback UDP, for
 * scripts/amudp-compare.sh: how fast this host moves DATAGRAMS datagrams of SIZE bytes
 * from one process to another with nothing but the kernel's work (COPY=0: sendmmsg from
 * one buffer, recvmmsg into one), or with the copies AMUDP makes besides (COPY=1: the
 * sender copies the user's buffer into one of 128 request buffers before it sends, as a
 * reliable sender must keep the bytes for a resend; the receiver copies each datagram
 * into a segment). Batches of 16, at most 64 datagrams unacknowledged (AMUDP's network
 * depth is 128, but 64 of 65,000 bytes already fill 4 MiB socket buffers; the receiver
 * counts every 16), no pinning (testbulk is not pinned). A datagram the kernel drops is not resent: the figure counts what
 * arrived (a stall of 2 ms forgives the window), and says how many were lost.
 *   udp-floor DATAGRAMS SIZE COPY      prints "udp-floor: N MB/s"
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCH 16
#define WINDOW 64
#define RING 128
#define SLOT 65536

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int bound(struct sockaddr_in *a) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0), big = 4 << 20;
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    *a = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
    socklen_t l = sizeof *a;
    if (bind(s, (void *)a, l) || getsockname(s, (void *)a, &l)) {
        perror("udp-floor: bind");
        exit(2);
    }
    return s;
}

static void *pages(size_t n, int fill) {
    void *p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
    if (!p) {
        perror("udp-floor: alloc");
        exit(2);
    }
    memset(p, fill, n);
    return p;
}

static void receive(int s, size_t size, int copy) {
    char *seg = pages(size, 0), *slots = pages((size_t)BATCH * SLOT, 0);
    struct mmsghdr m[BATCH];
    struct iovec v[BATCH];
    long got = 0, told = 0;
    for (int i = 0; i < BATCH; i++) {
        v[i] = (struct iovec){slots + (size_t)i * SLOT, SLOT};
        m[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &v[i], .msg_iovlen = 1}};
    }
    send(s, &got, sizeof got, 0); /* ready */
    for (;;) {
        int k = recvmmsg(s, m, BATCH, 0, NULL);
        for (int i = 0; i < k; i++) {
            if (m[i].msg_len < 16) { /* the end: the final count */
                long fin[2] = {got, -1};
                send(s, fin, sizeof fin, 0);
                return;
            }
            if (copy) memcpy(seg, v[i].iov_base, m[i].msg_len);
            got++;
        }
        if (got - told >= WINDOW / 4) {
            send(s, &got, sizeof got, 0);
            told = got;
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: udp-floor DATAGRAMS SIZE COPY(0|1)\n");
        return 2;
    }
    long n = atol(argv[1]);
    long size = atol(argv[2]);
    int copy = atoi(argv[3]);
    if (n < 1 || size < 16 || size > 65507 || (copy != 0 && copy != 1)) {
        fprintf(stderr, "udp-floor: DATAGRAMS >= 1, 16 <= SIZE <= 65507, COPY 0 or 1\n");
        return 2;
    }
    struct sockaddr_in sa, ra;
    int ss = bound(&sa), rs = bound(&ra);
    if (connect(ss, (void *)&ra, sizeof ra) || connect(rs, (void *)&sa, sizeof sa)) {
        perror("udp-floor: connect");
        return 2;
    }
    pid_t parent = getpid(), kid = fork();
    if (kid < 0) {
        perror("udp-floor: fork");
        return 2;
    }
    if (kid == 0) { /* the receiver ends with the sender, whatever ends it */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent) _exit(2);
        close(ss);
        receive(rs, size, copy);
        _exit(0);
    }
    close(rs);
    char *src = pages(size, 0x5a), *ring = pages((size_t)RING * SLOT, 1);
    struct mmsghdr m[BATCH];
    struct iovec v[BATCH];
    long count = -1, sent = 0, forgiven = 0, c;
    for (double t = now(); recv(ss, &count, sizeof count, 0) != sizeof count;)
        if (now() - t > 5) { /* the receiver's first count: it is there */
            fprintf(stderr, "udp-floor: no answer from the receiving process\n");
            kill(kid, SIGKILL);
            return 2;
        }
    double t0 = now(), progress = t0;
    while (sent < n) {
        while (recv(ss, &c, sizeof c, 0) == sizeof c)
            if (c > count) {
                count = c;
                progress = now();
            }
        long room = count + forgiven + WINDOW - sent;
        if (room <= 0) {
            if (now() - progress > 0.002) { /* lost: forgive the window */
                forgiven = sent - count;
                progress = now();
            }
            continue;
        }
        int k = room < BATCH ? (int)room : BATCH;
        if (k > n - sent) k = (int)(n - sent);
        for (int i = 0; i < k; i++) {
            char *p = src;
            if (copy) {
                p = ring + (size_t)((sent + i) % RING) * SLOT;
                memcpy(p, src, size);
            }
            v[i] = (struct iovec){p, (size_t)size};
            m[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &v[i], .msg_iovlen = 1}};
        }
        int r = sendmmsg(ss, m, k, 0);
        if (r > 0) sent += r;
    }
    long fin[2] = {0, 0};
    double asked = now();
    for (int done = 0; !done;) { /* the end marker, resent until counted */
        if (now() - asked > 5) {
            fprintf(stderr, "udp-floor: the receiving process gave no final count\n");
            kill(kid, SIGKILL);
            return 2;
        }
        send(ss, "E", 1, 0);
        double t = now();
        while (now() - t < 0.01 && !done)
            done = recv(ss, fin, sizeof fin, 0) == sizeof fin && fin[1] == -1;
    }
    double secs = now() - t0;
    waitpid(kid, NULL, 0);
    printf("udp-floor: %.0f MB/s\n", (double)fin[0] * size / secs / 1e6);
    if (fin[0] < n) fprintf(stderr, "udp-floor: %ld of %ld datagrams lost\n", n - fin[0], n);
    return 0;
}
