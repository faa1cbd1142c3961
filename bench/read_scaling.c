/* SPDX-License-Identifier: MIT */
/*
 * Read scaling: lookups per second with 1 and 2 reader threads while a
 * writer churns (alloc/remove), lockless RCU readers against the same idr
 * behind a pthread_rwlock.  Also the cost of deferred (RCU) freeing on
 * removal against an IDR_F_NO_RCU idr.  Prints ratios; the machine is noisy.
 */
#include <idr.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 1000000
#define RUN_NS 400000000L

static struct idr idr;
/* Writer-preferring, or readers starve the writer and the comparison is moot. */
static pthread_rwlock_t rwlock;
static long writes;
static volatile int stop;
static int use_rwlock;
static long sink;

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *reader(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 2654435761u + 1;
	long n = 0, hits = 0;

	while (!stop) {
		if (use_rwlock)
			pthread_rwlock_rdlock(&rwlock);
		else
			idr_rcu_read_lock();
		for (int i = 0; i < 16; i++)
			hits += idr_find(&idr, next_rand(&rng) % N) != NULL;
		if (use_rwlock)
			pthread_rwlock_unlock(&rwlock);
		else
			idr_rcu_read_unlock();
		n += 16;
	}
	__atomic_add_fetch(&sink, hits, __ATOMIC_RELAXED);
	return (void *)n;
}

static void *writer(void *arg)
{
	uint64_t rng = 99;
	(void)arg;

	while (!stop) {
		unsigned long id = next_rand(&rng) % N;
		idr_preload(IDR_GFP_KERNEL);
		if (use_rwlock)
			pthread_rwlock_wrlock(&rwlock);
		else
			idr_lock(&idr);
		if (!idr_remove(&idr, id))
			idr_alloc(&idr, &idr, (int)id, 0, IDR_GFP_NOWAIT);
		if (use_rwlock)
			pthread_rwlock_unlock(&rwlock);
		else
			idr_unlock(&idr);
		idr_preload_end();
		__atomic_add_fetch(&writes, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static double lookups_per_sec(int readers, int rw)
{
	pthread_t r[2], w;
	long total = 0;

	use_rwlock = rw;
	stop = 0;
	pthread_create(&w, NULL, writer, NULL);
	for (int i = 0; i < readers; i++)
		pthread_create(&r[i], NULL, reader, (void *)(intptr_t)(i + 1));
	long t0 = now_ns();
	struct timespec d = { 0, RUN_NS };
	nanosleep(&d, NULL);
	stop = 1;
	for (int i = 0; i < readers; i++) {
		void *n;
		pthread_join(r[i], &n);
		total += (long)n;
	}
	pthread_join(w, NULL);
	return total / ((now_ns() - t0) / 1e9);
}

static double median3(double a, double b, double c)
{
	if (a > b) { double t = a; a = b; b = t; }
	if (b > c) b = c;
	return a > b ? a : b;
}

static double remove_ns(unsigned flags)
{
	struct idr t;
	idr_init_flags(&t, 0, flags);
	for (int i = 0; i < N; i++)
		idr_alloc(&t, &t, 0, 0, IDR_GFP_KERNEL);
	long t0 = now_ns();
	for (int i = 0; i < N; i++)
		idr_remove(&t, (unsigned long)i);
	double ns = (double)(now_ns() - t0) / N;
	idr_destroy(&t);
	idr_rcu_barrier();
	return ns;
}

int main(void)
{
	pthread_rwlockattr_t attr;

	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&rwlock, &attr);
	idr_init(&idr);
	for (int i = 0; i < N; i += 2)
		idr_alloc(&idr, &idr, i, 0, IDR_GFP_KERNEL);
	double r[2][2];
	for (int rw = 0; rw < 2; rw++)
		for (int k = 1; k <= 2; k++)
			r[rw][k - 1] = median3(lookups_per_sec(k, rw), lookups_per_sec(k, rw),
					       lookups_per_sec(k, rw));
	printf("read scaling (N=%d, writer churning, median of 3 x %.1fs)\n", N, RUN_NS / 1e9);
	printf("  %-8s %14s %14s %8s\n", "backend", "1 reader/s", "2 readers/s", "2 vs 1");
	printf("  %-8s %14.0f %14.0f %7.2fx\n", "rcu", r[0][0], r[0][1], r[0][1] / r[0][0]);
	printf("  %-8s %14.0f %14.0f %7.2fx\n", "rwlock", r[1][0], r[1][1], r[1][1] / r[1][0]);
	printf("  rcu / rwlock with 2 readers: %.2fx (writer ops over all runs: %ld)\n", r[0][1] / r[1][1], writes);
	double rcu = remove_ns(0), direct = remove_ns(IDR_F_NO_RCU);
	printf("remove of %d dense IDs: rcu %.1f ns/op, IDR_F_NO_RCU %.1f ns/op (%.2fx)\n",
	       N, rcu, direct, rcu / direct);
	idr_destroy(&idr);
	idr_rcu_barrier();
	return sink < 0;
}
