// ring-stream.c -- the line-moving floor of a one-way shared-memory ring between two cores:
// a sender thread (core 0) writes REC-byte records (a word, then 8 payload bytes) into a
// 512 KiB ring, the reader (core 1) spins on the word at its head, reads the payload and
// clears the word, as ramp's ring reader does; no locked instruction between records.
// Prints messages per second (docs/shm-short-path-cost.md, the staged held records).
//   cc -O2 -o ring-stream scripts/ring-stream.c -lpthread && ./ring-stream 64 20000000
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#define RING (512*1024)
static _Alignas(64) unsigned char ring[RING];
static _Alignas(64) _Atomic uint64_t pub_head;
static size_t REC; static long N;
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void *rx(void*a){pin(1);uint64_t head=0;volatile uint64_t sink=0;
 for(long i=0;i<N;i++){size_t pos=head%RING;_Atomic uint32_t*w=(_Atomic uint32_t*)(ring+pos);
  uint32_t v;while(!(v=atomic_load_explicit(w,memory_order_acquire)));
  uint64_t x;memcpy(&x,ring+pos+8,8);sink+=x+v;
  atomic_store_explicit(w,0,memory_order_relaxed);head+=REC;
  if((i&63)==63)atomic_store_explicit(&pub_head,head,memory_order_release);}
 atomic_store_explicit(&pub_head,head,memory_order_release);return 0;}
int main(int c,char**v){
 if(c!=3){fprintf(stderr,"usage: ring-stream REC N (REC: 16..4096 bytes, a multiple of 16; N > 0)\n");return 2;}
 REC=strtoul(v[1],0,10);N=atol(v[2]);
 if(REC<16||REC>4096||REC%16||N<=0){fprintf(stderr,"ring-stream: REC must be 16..4096, a multiple of 16, and N > 0\n");return 2;}
pthread_t t;pthread_create(&t,0,rx,0);pin(0);
 uint64_t tail=0,head=0;double t0=now();
 for(long i=0;i<N;i++){while(tail+REC-head>RING-64){head=atomic_load_explicit(&pub_head,memory_order_acquire);}
  size_t pos=tail%RING;uint64_t x=i;memcpy(ring+pos+8,&x,8);
  atomic_store_explicit((_Atomic uint32_t*)(ring+pos),1,memory_order_release);tail+=REC;}
 pthread_join(t,0);double dt=now()-t0;printf("rec %zu: %.1f M msgs/s (%.1f ns)\n",REC,N/dt/1e6,dt/N*1e9);return 0;}
