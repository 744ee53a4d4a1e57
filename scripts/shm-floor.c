/* shm-floor.c -- the floors under a one-way bulk stream between two processes of one host,
 * for scripts/amudp-compare.sh: how fast this host moves MESSAGES messages of SIZE bytes from
 * a sender's buffer into a receiver's segment (at offset 100, as GASNet's testbulk does) with
 * nothing but the copies a same-host transport cannot avoid, in one of two ways:
 *   ring   one copy each end through a ring of 8 SIZE-byte slots in memory both map (the
 *          sender copies its buffer into a free slot, the receiver copies the slot into its
 *          segment): a stream, the sender's next copy overlapping the receiver's last;
 *   cma    the copy split between the processes with the kernel's cross-memory calls, the
 *          way ramp's direct Xfer does it (src/am/rma/xfer_split.rs): the sender publishes a
 *          message, the receiver reads its head (process_vm_readv) while the sender writes
 *          its tail (process_vm_writev), and the sender goes on only once both are in place
 *          (AM_RequestXfer's buffer may be reused when the call returns).
 * No protocol, no handler, no checks: what is left of a message's cost is the copies' (and
 * for cma the kernel's pinning of the other process's pages) and one hand-over of a cache
 * line each way. No pinning (testbulk is not pinned).
 *   shm-floor MESSAGES SIZE ring|cma      prints "shm-floor: N MB/s"
 * Exit 2 with a message on bad arguments, or when the other process does not answer within
 * 5 s (a receiver dies with its sender: PR_SET_PDEATHSIG).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 8
#define OFFSET 100
#define MAX_SIZE (64 << 20)

struct line {
    _Atomic unsigned long v;
    char pad[120];
};

/* What both processes map: the counters each on its own lines, then the ring's slots. */
struct shared {
    struct line sent;  /* ring: messages in the slots; cma: the message offered */
    struct line taken; /* ring: messages copied out; cma: the receiver's head copied */
    struct line tail;  /* cma: the sender's tail written */
    struct line seg;   /* cma: the receiver's segment address (published once) */
    char slots[];
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void die(const char *what) {
    fprintf(stderr, "shm-floor: %s\n", what);
    exit(2);
}

/* Waits until *w reaches at least v; exits 2 after 5 s. */
static void wait_for(_Atomic unsigned long *w, unsigned long v, const char *who) {
    double limit = 0;
    for (unsigned long spins = 0; atomic_load_explicit(w, memory_order_acquire) < v; spins++) {
        if ((spins & 0xffff) == 0) {
            if (limit == 0)
                limit = now() + 5;
            else if (now() > limit) {
                fprintf(stderr, "shm-floor: the %s did not answer within 5 s\n", who);
                exit(2);
            }
        }
    }
}

static void *pages(size_t n, int fill) {
    char *p = malloc(n);
    if (!p)
        die("out of memory");
    memset(p, fill, n);
    return p;
}

static void receive(struct shared *sh, pid_t sender, size_t n, size_t size, int cma) {
    char *seg = pages(size + OFFSET, 0);
    size_t head = (size / 2) & ~(size_t)63;
    atomic_store_explicit(&sh->seg.v, (unsigned long)seg, memory_order_release);
    for (size_t i = 1; i <= n; i++) {
        wait_for(&sh->sent.v, i, "sender");
        if (cma) {
            /* the sender's buffer address comes with the offer, in `tail`'s pad */
            void *src;
            memcpy(&src, sh->tail.pad, sizeof src);
            struct iovec l = {seg + OFFSET, head}, r = {src, head};
            if (process_vm_readv(sender, &l, 1, &r, 1, 0) != (ssize_t)head)
                die("process_vm_readv failed (ptrace scope?)");
            wait_for(&sh->tail.v, i, "sender");
        } else {
            memcpy(seg + OFFSET, sh->slots + (i % SLOTS) * size, size);
        }
        atomic_store_explicit(&sh->taken.v, i, memory_order_release);
    }
    if (seg[OFFSET + size - 1] != 7)
        die("the bytes did not arrive");
}

static void send_all(struct shared *sh, pid_t receiver, size_t n, size_t size, int cma) {
    char *buf = pages(size, 7);
    size_t head = (size / 2) & ~(size_t)63;
    wait_for(&sh->seg.v, 1, "receiver");
    char *seg = (char *)atomic_load(&sh->seg.v);
    memcpy(sh->tail.pad, &buf, sizeof buf);
    for (size_t i = 1; i <= n; i++) {
        if (cma) {
            atomic_store_explicit(&sh->sent.v, i, memory_order_release);
            struct iovec l = {buf + head, size - head}, r = {seg + OFFSET + head, size - head};
            if (process_vm_writev(receiver, &l, 1, &r, 1, 0) != (ssize_t)(size - head))
                die("process_vm_writev failed (ptrace scope?)");
            atomic_store_explicit(&sh->tail.v, i, memory_order_release);
            wait_for(&sh->taken.v, i, "receiver");
        } else {
            if (i > SLOTS)
                wait_for(&sh->taken.v, i - SLOTS, "receiver");
            memcpy(sh->slots + (i % SLOTS) * size, buf, size);
            atomic_store_explicit(&sh->sent.v, i, memory_order_release);
        }
    }
    wait_for(&sh->taken.v, n, "receiver");
}

int main(int argc, char **argv) {
    char *end1 = "", *end2 = "";
    long n = argc == 4 ? strtol(argv[1], &end1, 10) : 0;
    long size = argc == 4 ? strtol(argv[2], &end2, 10) : 0;
    int cma = argc == 4 && !strcmp(argv[3], "cma");
    if (argc != 4 || *end1 || *end2 || n <= 0 || size <= 0 || size > MAX_SIZE ||
        (!cma && strcmp(argv[3], "ring"))) {
        fprintf(stderr, "usage: shm-floor MESSAGES SIZE ring|cma (MESSAGES > 0, 0 < SIZE <= %d)\n",
                MAX_SIZE);
        return 2;
    }
    size_t len = sizeof(struct shared) + (cma ? 0 : (size_t)SLOTS * size);
    struct shared *sh = mmap(0, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        die("cannot map the shared ring");
    pid_t parent = getpid(), child = fork();
    if (child < 0)
        die("cannot fork");
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(2);
        receive(sh, parent, n, size, cma);
        _exit(0);
    }
    double t0 = now();
    send_all(sh, child, n, size, cma);
    double t = now() - t0;
    int st;
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st))
        die("the receiver failed");
    printf("shm-floor: %.0f MB/s\n", (double)n * size / t / 1e6);
    return 0;
}
