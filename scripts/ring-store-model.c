/* A model of the shared-memory express lane's one-way stream (ARCHITECTURE.md,
 * "What bounds the lane's one-way rate"): two threads pinned to cores 0 and 1,
 * a ring of records on cache lines of their own, each found by its word, which
 * the receiver clears as it takes the record (as net/shm_ring.rs does); the
 * receiver publishes its head every eighth of the ring.
 *
 * Per message the sender writes the record and its word, and also `stores`
 * stores to its own stack (the rest of a request's work), and, with `locked`,
 * one locked add to a line of its own (what a lock or an Arc count does).
 * `burst` > 1: the records are first written to private memory and copied
 * into the ring `burst` at a time (TxRing::hold).
 *
 * usage: ring-store-model STORES LOCKED BURST   (prints ns per message)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 4096
#define MSGS 20000000UL

typedef struct {
    _Alignas(64) _Atomic uint32_t word;
    uint32_t pad;
    uint64_t data[7];
} rec_t;

static rec_t ring[N];
static _Alignas(64) _Atomic uint64_t head;
static _Alignas(64) _Atomic uint64_t lock_word;

static void pin(int c) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(c, &s);
    sched_setaffinity(0, sizeof s, &s);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *receiver(void *arg) {
    (void)arg;
    pin(1);
    uint64_t h = 0, sum = 0;
    while (h < MSGS) {
        rec_t *r = &ring[h % N];
        if (atomic_load_explicit(&r->word, memory_order_acquire) == 0) {
            __builtin_ia32_pause();
            continue;
        }
        sum += r->data[0];
        atomic_store_explicit(&r->word, 0, memory_order_relaxed);
        h++;
        if ((h & (N / 8 - 1)) == 0)
            atomic_store_explicit(&head, h, memory_order_release);
    }
    return (void *)(uintptr_t)sum;
}

static void put(uint64_t i, const uint64_t *d) {
    rec_t *r = &ring[i % N];
    r->data[0] = d[0];
    r->data[1] = d[1];
    r->data[2] = d[2];
    atomic_store_explicit(&r->word, 1, memory_order_release);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s STORES LOCKED BURST\n", argv[0]);
        return 2;
    }
    int stores = atoi(argv[1]), locked = atoi(argv[2]), burst = atoi(argv[3]);
    if (stores < 0 || stores > 256 || burst < 1 || burst > 64) {
        fprintf(stderr, "STORES 0..256, BURST 1..64\n");
        return 2;
    }
    pthread_t t;
    pthread_create(&t, 0, receiver, 0);
    pin(0);
    volatile uint64_t stack[256];
    uint64_t held[64][3];
    int n_held = 0;
    uint64_t seen_head = 0, written = 0;
    double t0 = now();
    for (uint64_t i = 0; i < MSGS; i++) {
        for (int k = 0; k < stores; k++)
            stack[k] = i + k;
        if (locked)
            atomic_fetch_add(&lock_word, 1);
        held[n_held][0] = held[n_held][1] = held[n_held][2] = i;
        n_held++;
        if (n_held == burst || i + 1 == MSGS) {
            while (written + n_held - seen_head >= N - N / 8)
                seen_head = atomic_load_explicit(&head, memory_order_acquire);
            for (int k = 0; k < n_held; k++)
                put(written++, held[k]);
            n_held = 0;
        }
    }
    (void)stack; /* written for the stores' sake */
    pthread_join(t, 0);
    double dt = now() - t0;
    printf("stores %3d locked %d burst %2d: %6.1f ns a message\n", stores, locked, burst,
           dt / MSGS * 1e9);
    return 0;
}
