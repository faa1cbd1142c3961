/* SPDX-License-Identifier: MIT */
/*
 * make bench: libidr side by side with its peers, in one run.  See
 * bench/README.md for what each workload means.  Every workload checks its
 * results (IDs returned, checksums, heap back to where it started), so a
 * broken fast path cannot win; every timing is the median of several runs.
 *
 *   bench [-n N] [-r repeats] [--large] [--quick] [--plot DIR]
 */
#include <Judy.h>
#include <idr.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <urcu-bp.h>

#include "bench.h"
#include "flat.h"

/* ---- shared input, generated once ---- */

struct obj {
	uint64_t next; /* the key of the next object on the lookup chain */
};

struct plan {
	long n;
	struct obj *obj;
	long *perm;        /* a random permutation of 0..n-1 */
	long *chain;       /* a single cycle through 0..n-1 */
	long *sorted_half; /* perm[0 .. n/2) sorted */
	long *sorted_gone; /* perm[0 .. 99% of n) sorted */
	long *scale_perm;  /* random values for the scaling plot */
	uint64_t *key_seq, *key_rand;
	uint64_t obj_sum;  /* sum of every object's address */
};

enum metric {
	M_DENSE, M_SEQ, M_RAND, M_CHAIN, M_ITER, M_HALF, M_ITER_SPARSE, M_REFILL, M_CYCLIC,
	M_BYTES_DENSE, M_SELF_DENSE, M_BYTES_SPARSE, M_SELF_SPARSE, M_COUNT
};

struct sample {
	double v[M_COUNT];
};

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

static long *sorted_prefix(const long *perm, long k)
{
	long *s = malloc((size_t)k * sizeof(long));

	memcpy(s, perm, (size_t)k * sizeof(long));
	qsort(s, (size_t)k, sizeof(long), cmp_long);
	return s;
}

static void make_plan(struct plan *pl, long n)
{
	uint64_t rng = 0x2545F4914F6CDD1DULL;

	pl->n = n;
	pl->obj = calloc((size_t)n, sizeof(*pl->obj));
	pl->perm = malloc((size_t)n * sizeof(long));
	pl->chain = malloc((size_t)n * sizeof(long));
	pl->scale_perm = malloc((size_t)n * sizeof(long));
	pl->key_seq = malloc((size_t)n * sizeof(uint64_t));
	pl->key_rand = malloc((size_t)n * sizeof(uint64_t));
	for (long i = 0; i < n; i++) {
		pl->perm[i] = i;
		pl->scale_perm[i] = (long)(rnd(&rng) >> 1);
	}
	for (long i = n - 1; i > 0; i--) { /* Fisher-Yates */
		long j = (long)(rnd(&rng) % (uint64_t)(i + 1)), t = pl->perm[i];
		pl->perm[i] = pl->perm[j];
		pl->perm[j] = t;
	}
	/* Sattolo: a random cyclic permutation, so the chain visits all. */
	long *order = malloc((size_t)n * sizeof(long));
	for (long i = 0; i < n; i++)
		order[i] = i;
	for (long i = n - 1; i > 0; i--) {
		long j = (long)(rnd(&rng) % (uint64_t)i), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (long i = 0; i < n; i++)
		pl->chain[order[i]] = order[(i + 1) % n];
	free(order);
	pl->sorted_half = sorted_prefix(pl->perm, n / 2);
	pl->sorted_gone = sorted_prefix(pl->perm, n - n / 100);
	pl->obj_sum = 0;
	for (long i = 0; i < n; i++)
		pl->obj_sum += (uintptr_t)&pl->obj[i];
}

/* A result check inside a timed loop: cheap, and the first failure's line
 * is kept for the report. */
static int first_bad_line;
#define VERIFY(cond)                                                        \
	do {                                                                \
		if (!(cond)) {                                              \
			ok = false;                                         \
			if (!first_bad_line)                                \
				first_bad_line = __LINE__;                  \
		}                                                           \
	} while (0)

/* ---- backends ---- */

/* libidr, as installed users get it: default flags (RCU), -O2. */
static void *libidr_create(void)
{
	struct idr *idr = malloc(sizeof(*idr));

	idr_init(idr);
	return idr;
}
static void libidr_destroy(void *t)
{
	idr_destroy(t);
	free(t);
}
static int settled;

static void mark_settled(struct rcu_head *head)
{
	(void)head;
	__atomic_store_n(&settled, 1, __ATOMIC_RELEASE);
}

/* Every deferred free done, and the heap still.  idr_rcu_barrier() waits
 * for the frees, but liburcu's worker frees the barrier's own records
 * just after it wakes the caller, so a heap count taken at once could
 * still hold them (48 bytes, seen when another process loaded the CPU).
 * A callback queued now runs after those frees (one worker, callbacks in
 * order) and allocates nothing: once it has run, the heap is still. */
static void libidr_settle(void)
{
	static struct rcu_head head;

	idr_rcu_barrier();
	__atomic_store_n(&settled, 0, __ATOMIC_RELAXED);
	call_rcu(&head, mark_settled);
	while (!__atomic_load_n(&settled, __ATOMIC_ACQUIRE)) {
		struct timespec d = { 0, 20000 };
		nanosleep(&d, NULL);
	}
}
static inline long libidr_alloc(void *t, void *p, long start, long end)
{
	return idr_alloc(t, p, (int)start, end > INT_MAX ? 0 : (int)end,
			 IDR_GFP_KERNEL);
}
static inline long libidr_cyclic(void *t, void *p, long end, unsigned *cursor)
{
	(void)cursor; /* the idr keeps its own */
	return idr_alloc_cyclic(t, p, 0, (int)end, IDR_GFP_KERNEL);
}
static inline uint64_t libidr_key(void *t, long id)
{
	(void)t;
	return (uint64_t)id;
}
static inline void *libidr_find(void *t, uint64_t key)
{
	return idr_find(t, (unsigned long)key);
}
/* The next entry from *@id on, as idr_for_each_entry() gets it. */
static inline void *libidr_next(void *t, long *id)
{
	int k = (int)*id;
	void *p = idr_get_next(t, &k);

	*id = k;
	return p;
}
static inline void *libidr_remove(void *t, long id)
{
	return idr_remove(t, (unsigned long)id);
}
static size_t libidr_self(void *t)
{
	return idr_memory_usage(t);
}
static const bool libidr_removes = true;

/* libidr with IDR_F_HANDLES, looked up by handle. */
static void *handles_create(void)
{
	struct idr *idr = malloc(sizeof(*idr));

	idr_init_flags(idr, 0, IDR_F_HANDLES);
	return idr;
}
#define handles_destroy libidr_destroy
#define handles_settle libidr_settle
#define handles_cyclic libidr_cyclic
#define handles_remove libidr_remove
#define handles_next libidr_next
#define handles_self libidr_self
static inline long handles_alloc(void *t, void *p, long start, long end)
{
	idr_handle_t h;

	return idr_alloc_handle(t, p, (int)start, end > INT_MAX ? 0 : (int)end,
				IDR_GFP_KERNEL, &h);
}
static inline uint64_t handles_key(void *t, long id)
{
	return idr_handle_of(t, (unsigned long)id);
}
static inline void *handles_find(void *t, uint64_t key)
{
	return idr_find_handle(t, key);
}
static const bool handles_removes = false;

/* flat: the physical limit. */
static void *flatbe_create(void)
{
	return calloc(1, sizeof(struct flat));
}
static void flatbe_destroy(void *t)
{
	flat_free(t);
	free(t);
}
static void flatbe_settle(void)
{
}
static inline long flatbe_alloc(void *t, void *p, long start, long end)
{
	return flat_alloc(t, p, (size_t)start, (size_t)end);
}
static inline long flatbe_cyclic(void *t, void *p, long end, unsigned *cursor)
{
	long id = flat_alloc(t, p, *cursor, (size_t)end);

	if (id < 0)
		id = flat_alloc(t, p, 0, (size_t)end);
	if (id >= 0)
		*cursor = (unsigned)id + 1;
	return id;
}
static inline uint64_t flatbe_key(void *t, long id)
{
	(void)t;
	return (uint64_t)id;
}
static inline void *flatbe_find(void *t, uint64_t key)
{
	return flat_find(t, key);
}
static inline void *flatbe_next(void *t, long *id)
{
	size_t k = flat_next(t, (size_t)*id);

	*id = (long)k;
	return flat_find(t, k);
}
static inline void *flatbe_remove(void *t, long id)
{
	return flat_remove(t, (size_t)id);
}
static size_t flatbe_self(void *t)
{
	(void)t;
	return 0;
}
static const bool flatbe_removes = true;

/* judy: JudyL, JudyLFirstEmpty for the lowest free index. */
static void *judy_create(void)
{
	return calloc(1, sizeof(Pvoid_t));
}
static void judy_destroy(void *t)
{
	/* The function, not the JLFA macro, whose error test trips clang's
	 * -Wsign-compare. */
	JudyLFreeArray((PPvoid_t)t, PJE0);
	free(t);
}
static void judy_settle(void)
{
}
static inline long judy_alloc(void *t, void *p, long start, long end)
{
	Word_t idx = (Word_t)start;
	int rc;
	PWord_t v;

	JLFE(rc, *(Pvoid_t *)t, idx);
	if (!rc || idx >= (Word_t)end)
		return -1;
	JLI(v, *(Pvoid_t *)t, idx);
	*v = (Word_t)p;
	return (long)idx;
}
static inline long judy_cyclic(void *t, void *p, long end, unsigned *cursor)
{
	long id = judy_alloc(t, p, *cursor, end);

	if (id < 0)
		id = judy_alloc(t, p, 0, end);
	if (id >= 0)
		*cursor = (unsigned)id + 1;
	return id;
}
static inline uint64_t judy_key(void *t, long id)
{
	(void)t;
	return (uint64_t)id;
}
static inline void *judy_find(void *t, uint64_t key)
{
	PWord_t v;

	JLG(v, *(Pvoid_t *)t, (Word_t)key);
	return v ? (void *)*v : NULL;
}
static inline void *judy_next(void *t, long *id)
{
	Word_t idx = (Word_t)*id;
	PWord_t v;

	JLF(v, *(Pvoid_t *)t, idx);
	if (!v)
		return NULL;
	*id = (long)idx;
	return (void *)*v;
}
static inline void *judy_remove(void *t, long id)
{
	PWord_t v;
	int rc;

	JLG(v, *(Pvoid_t *)t, (Word_t)id);
	if (!v)
		return NULL;
	void *old = (void *)*v;
	JLD(rc, *(Pvoid_t *)t, (Word_t)id);
	(void)rc;
	return old;
}
static size_t judy_self(void *t)
{
	return JudyLMemUsed(*(Pvoid_t *)t);
}
static const bool judy_removes = true;

#define BE libidr
#include "workloads.h"
#undef BE
#define BE handles
#include "workloads.h"
#undef BE
#define BE flatbe
#include "workloads.h"
#undef BE
#define BE judy
#include "workloads.h"
#undef BE

struct backend {
	const char *name;
	bool (*core)(const struct plan *pl, struct sample *r);
	void (*scaling)(const struct plan *pl, long n, double *alloc_ns,
			double *find_ns);
};

enum { B_LIBIDR, B_HANDLES, B_FLAT, B_JUDY, B_COUNT };
static const struct backend backends[B_COUNT] = {
	{ "libidr", libidr_core, libidr_scaling },
	{ "handles", handles_core, handles_scaling },
	{ "flat", flatbe_core, flatbe_scaling },
	{ "judy", judy_core, judy_scaling },
};

/* The median of @num[r] / @den[r]: runs paired within a repeat. */
static double median_ratio(const double *num, const double *den, int k)
{
	double ratio[MAX_REPEATS] = { 0 };

	for (int r = 0; r < k; r++)
		ratio[r] = num[r] / den[r];
	return median(ratio, k);
}

/* Run every backend's core workloads @repeats times, interleaved so that
 * a noisy moment hurts all backends alike; medians into @out. */
static bool run_core(const struct plan *pl, int repeats, double out[B_COUNT][M_COUNT])
{
	static double v[B_COUNT][M_COUNT][MAX_REPEATS];
	bool ok = true;

	for (int r = 0; r < repeats; r++)
		for (int b = 0; b < B_COUNT; b++) {
			struct sample s;
			for (int m = 0; m < M_COUNT; m++)
				s.v[m] = -1;
			if (!backends[b].core(pl, &s)) {
				fprintf(stderr, "bench: %s gave a wrong result (workloads.h:%d)\n",
					backends[b].name, first_bad_line);
				ok = false;
			}
			for (int m = 0; m < M_COUNT; m++)
				v[b][m][r] = s.v[m];
		}
	for (int b = 0; b < B_COUNT; b++)
		for (int m = 0; m < M_COUNT; m++)
			out[b][m] = median(v[b][m], repeats);
	return ok;
}

/* ---- ida: IDs only ---- */

enum { I_DENSE, I_CHURN, I_BYTES, I_COUNT };

/* @alloc(t) returns the lowest free ID; @release(t, id) frees it. */
#define IDA_WORKLOAD(name, T, init, alloc, release, fini)                      \
	static bool name(const struct plan *pl, double *v)                     \
	{                                                                      \
		long n = pl->n, h0 = heap_bytes(), t0;                          \
		bool ok = true;                                                 \
		T t;                                                            \
		init;                                                           \
		t0 = now_ns();                                                  \
		for (long i = 0; i < n; i++)                                    \
			ok &= (alloc) == i;                                     \
		v[I_DENSE] = (double)(now_ns() - t0) / (double)n;               \
		v[I_BYTES] = (double)(heap_bytes() - h0) / (double)n;           \
		t0 = now_ns();                                                  \
		for (long j = 0; j < n; j++) {                                  \
			long id = pl->perm[j];                                  \
			release;                                                \
			ok &= (alloc) == id; /* the only hole */                \
		}                                                               \
		v[I_CHURN] = (double)(now_ns() - t0) / (double)n;               \
		fini;                                                           \
		return ok && heap_bytes() == h0;                                \
	}

IDA_WORKLOAD(ida_libidr, struct ida, ida_init(&t), ida_alloc(&t, IDR_GFP_KERNEL),
	     ida_free(&t, (unsigned)id), ida_destroy(&t))
IDA_WORKLOAD(ida_flat, struct flat, (memset(&t, 0, sizeof(t)), t.ids_only = true),
	     flat_alloc(&t, NULL, 0, SIZE_MAX), flat_remove(&t, (size_t)id),
	     flat_free(&t))

static long judy1_alloc(Pvoid_t *a)
{
	Word_t idx = 0;
	int rc;

	J1FE(rc, *a, idx);
	J1S(rc, *a, idx);
	return (long)idx;
}

IDA_WORKLOAD(ida_judy, Pvoid_t, t = NULL, judy1_alloc(&t),
	     { int rc; J1U(rc, t, (Word_t)id); (void)rc; },
	     Judy1FreeArray(&t, PJE0))

static const char *const ida_names[] = { "libidr", "flat", "judy" };
static bool (*const ida_runs[])(const struct plan *, double *) = {
	ida_libidr, ida_flat, ida_judy,
};

/* ---- the seed pattern ---- */

enum seed_mode { PLAIN, LOCKED, SEED, LOCK_PAIR, SEED_MUTEX };

/* The seed table's rows: the first four modes, with SEED also on 2
 * threads, then SEED_MUTEX (the seed pattern with a pthread mutex in
 * idr_lock's place, the peer for the lock) on 2 threads. */
#define SEED_ROWS 6

static pthread_mutex_t seed_mutex = PTHREAD_MUTEX_INITIALIZER;

struct seed_arg {
	struct idr *idr;
	const struct plan *pl;
	long from, count;
	enum seed_mode mode;
};

static void *seed_worker(void *arg)
{
	struct seed_arg *a = arg;

	for (long i = a->from; i < a->from + a->count; i++) {
		if (a->mode == PLAIN) {
			idr_alloc(a->idr, &a->pl->obj[i], 0, 0, IDR_GFP_KERNEL);
			continue;
		}
		if (a->mode == LOCK_PAIR) { /* the floor the lock sets: no allocation */
			idr_lock(a->idr);
			idr_unlock(a->idr);
			continue;
		}
		if (a->mode == LOCKED) { /* the lock's share of the seed pattern */
			idr_lock(a->idr);
			idr_alloc(a->idr, &a->pl->obj[i], 0, 0, IDR_GFP_KERNEL);
			idr_unlock(a->idr);
			continue;
		}
		idr_preload(IDR_GFP_KERNEL);
		if (a->mode == SEED_MUTEX)
			pthread_mutex_lock(&seed_mutex);
		else
			idr_lock(a->idr);
		idr_alloc(a->idr, &a->pl->obj[i], 0, 0, IDR_GFP_NOWAIT);
		if (a->mode == SEED_MUTEX)
			pthread_mutex_unlock(&seed_mutex);
		else
			idr_unlock(a->idr);
		idr_preload_end();
	}
	return NULL;
}

/* ns per ID for @threads threads sharing one idr; false if the idr does not
 * end up holding exactly 0..n-1 (or, for LOCK_PAIR, nothing). */
static bool seed_run(const struct plan *pl, int threads, enum seed_mode mode, double *ns)
{
	struct idr idr;
	pthread_t t[2];
	struct seed_arg a[2];
	long n = pl->n, t0 = now_ns();
	bool ok = true;

	idr_init(&idr);
	for (int i = 0; i < threads; i++) {
		a[i] = (struct seed_arg){ &idr, pl, i * (n / threads), n / threads, mode };
		pthread_create(&t[i], NULL, seed_worker, &a[i]);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	*ns = (double)(now_ns() - t0) / (double)n;
	if (mode == LOCK_PAIR) {
		ok = idr_is_empty(&idr);
	} else {
		for (long i = 0; i < n / threads * threads; i++)
			ok &= idr_find(&idr, (unsigned long)i) != NULL;
		ok &= idr_find(&idr, (unsigned long)(n / threads * threads)) == NULL;
	}
	idr_destroy(&idr);
	/* The next mode must not run while liburcu's thread frees this tree:
	 * it would share the malloc arena's lock with it, and only the mode
	 * after PLAIN (and its own) would pay, never PLAIN after LOCK_PAIR. */
	libidr_settle();
	return ok;
}

/* ---- read scaling: lockless RCU readers vs a rwlock, writer churning ---- */

#define WRITES_PER_SEC 200000
#define READ_NS 300000000L /* per run; repeats x 4 runs a setup */

static struct idr shared;
static pthread_rwlock_t rwlock; /* writer-preferring: else the writer starves */
static int stop, use_rwlock;
static long rs_space, rs_writes, rs_rate; /* rs_rate 0: as fast as it can */
static int rs_batch; /* lookups per read-side section */

/* rs_batch lookups per read-side section: 1 is how users write a lookup
 * (lock, find, use, unlock), 16 a reader that batches. */
static void *rs_reader(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 2654435761u + 1;
	long n = 0, hits = 0;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 16; i += rs_batch) {
			if (use_rwlock)
				pthread_rwlock_rdlock(&rwlock);
			else
				idr_rcu_read_lock();
			for (int k = 0; k < rs_batch; k++)
				hits += idr_find(&shared, rnd(&rng) % (uint64_t)rs_space) != NULL;
			if (use_rwlock)
				pthread_rwlock_unlock(&rwlock);
			else
				idr_rcu_read_unlock();
		}
		n += 16;
	}
	return (void *)(n + (hits < 0));
}

/* The writer: at a fixed rate, so that 1 and 2 readers face the same
 * churn, or (rs_rate 0) as fast as it can, taking its share of the CPUs. */
static void *rs_writer(void *arg)
{
	uint64_t rng = 99;
	long t0 = now_ns(), done = 0;

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		for (int k = 0; k < 64; k++, done++) {
			unsigned long id = rnd(&rng) % (uint64_t)rs_space;
			idr_preload(IDR_GFP_KERNEL);
			if (use_rwlock)
				pthread_rwlock_wrlock(&rwlock);
			else
				idr_lock(&shared);
			if (!idr_remove(&shared, id))
				idr_alloc(&shared, &shared, (int)id, 0, IDR_GFP_NOWAIT);
			if (use_rwlock)
				pthread_rwlock_unlock(&rwlock);
			else
				idr_unlock(&shared);
			idr_preload_end();
		}
		long due = rs_rate ? t0 + done * (1000000000L / rs_rate) - now_ns() : 0;
		if (due > 0) {
			struct timespec d = { 0, due };
			nanosleep(&d, NULL);
		}
	}
	__atomic_add_fetch(&rs_writes, done, __ATOMIC_RELAXED);
	return NULL;
}

/* Lookups per second; *@wps gets the writer's achieved ops per second, so
 * that a comparison in which the writer fell behind shows it. */
static double lookups_per_sec(int readers, int rw, double *wps)
{
	pthread_t r[2], w;
	long total = 0, w0 = __atomic_load_n(&rs_writes, __ATOMIC_RELAXED);

	use_rwlock = rw;
	stop = 0;
	pthread_create(&w, NULL, rs_writer, NULL);
	for (int i = 0; i < readers; i++)
		pthread_create(&r[i], NULL, rs_reader, (void *)(intptr_t)(i + 1));
	long t0 = now_ns();
	struct timespec d = { 0, READ_NS };
	nanosleep(&d, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < readers; i++) {
		void *n;
		pthread_join(r[i], &n);
		total += (long)n;
	}
	pthread_join(w, NULL);
	double secs = (double)(now_ns() - t0) / 1e9;
	*wps = (double)(__atomic_load_n(&rs_writes, __ATOMIC_RELAXED) - w0) / secs;
	return (double)total / secs;
}

/* One setup's results: medians over the repeats, of rates and of ratios. */
struct scaling {
	double rate[2][2];   /* lookups/s [rcu, rwlock][1, 2 readers] */
	double writes[2][2]; /* the writer's ops/s, the same way */
	double two_vs_one[2]; /* [rcu, rwlock] */
	double rcu_vs_rwlock; /* 2 readers */
};

/* Each repeat runs all four (lock, readers) cases back to back, and the
 * ratios are taken within a repeat, then their median: the machine's
 * speed drifts by 1.5x over seconds (a busy neighbour on the host), and
 * four 1-reader runs in a row followed by four 2-reader runs read that
 * drift as scaling (2-vs-1 ratios from 1.42x to 3.10x in one session). */
static void read_scaling(long n, int repeats, struct scaling *out)
{
	pthread_rwlockattr_t attr;
	double v[2][2][MAX_REPEATS] = { 0 }, wv[2][2][MAX_REPEATS] = { 0 };

	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&rwlock, &attr);
	rs_space = n;
	idr_init(&shared);
	for (long i = 0; i < n; i += 2)
		idr_alloc(&shared, &shared, (int)i, 0, IDR_GFP_KERNEL);
	for (int r = 0; r < repeats; r++)
		for (int rw = 0; rw < 2; rw++)
			for (int k = 0; k < 2; k++)
				v[rw][k][r] = lookups_per_sec(k + 1, rw, &wv[rw][k][r]);
	for (int rw = 0; rw < 2; rw++) {
		for (int k = 0; k < 2; k++) {
			out->rate[rw][k] = median(v[rw][k], repeats);
			out->writes[rw][k] = median(wv[rw][k], repeats);
		}
		out->two_vs_one[rw] = median_ratio(v[rw][1], v[rw][0], repeats);
	}
	out->rcu_vs_rwlock = median_ratio(v[0][1], v[1][1], repeats);
	idr_destroy(&shared);
	libidr_settle();
}

/* ---- what a call costs ---- */

/* flat's sequential and random lookups inlined and called out of line, and
 * idr_find, on dense tables of the same IDs with the same keys, interleaved:
 * what any library's lookup pays for being a call before its data structure
 * costs anything, and what libidr pays on top. */
enum { C_INLINE, C_CALL, C_LIBIDR, C_HOW };

static double lookup_pass(const struct flat *f, const struct idr *idr, int how,
			  const uint64_t *key, long n, uint64_t *out_sum)
{
	uint64_t sum = 0; /* a local: a store through @out_sum each time could alias @key */
	long t0 = now_ns();

	if (how == C_INLINE)
		for (long i = 0; i < n; i++)
			sum += (uintptr_t)flat_find(f, key[i]);
	else if (how == C_CALL)
		for (long i = 0; i < n; i++)
			sum += (uintptr_t)flat_find_call(f, key[i]);
	else
		for (long i = 0; i < n; i++)
			sum += (uintptr_t)idr_find(idr, (unsigned long)key[i]);
	double ns = (double)(now_ns() - t0) / (double)n;
	*out_sum = sum;
	return ns;
}

/* Medians into @out[sequential, random][how]. */
static bool call_cost(struct plan *pl, int repeats, double out[2][C_HOW])
{
	double v[2][C_HOW][MAX_REPEATS];
	struct flat f = { 0 };
	struct idr idr;
	long n = pl->n;
	bool ok = true;

	idr_init(&idr);
	for (long i = 0; i < n; i++) {
		ok &= flat_alloc(&f, &pl->obj[i], 0, (size_t)n) == i;
		ok &= idr_alloc(&idr, &pl->obj[i], 0, 0, IDR_GFP_KERNEL) == i;
		pl->key_seq[i] = (uint64_t)i;
		pl->key_rand[i] = (uint64_t)pl->perm[i];
	}
	for (int r = 0; r < repeats; r++)
		for (int k = 0; k < 2; k++)
			for (int how = 0; how < C_HOW; how++) {
				const uint64_t *key = k ? pl->key_rand : pl->key_seq;
				uint64_t sum;
				/* The two tables do not fit in cache together here:
				 * an untimed pass first, so that every timed pass
				 * starts from its own table's data. */
				lookup_pass(&f, &idr, how, key, n, &sum);
				v[k][how][r] = lookup_pass(&f, &idr, how, key, n, &sum);
				ok &= sum == pl->obj_sum;
			}
	for (int k = 0; k < 2; k++)
		for (int how = 0; how < C_HOW; how++)
			out[k][how] = median(v[k][how], repeats);
	flat_free(&f);
	idr_destroy(&idr);
	libidr_settle(); /* so the ida workloads' heap counts start from here */
	return ok;
}

/* ---- where the IDs sit ---- */

/* Dense IDs from 0 take the keyed lookup directory; from far above 0, a
 * span directory over the IDs in use, reached out of line; beside a few
 * IDs near 0, a window over them (docs/design.md, "Keyed from ID 0, or a
 * span" and "A window where no span pays"). */
enum { FROM_COUNT = 5 };
static const struct {
	int base, start, below; /* IDs from @start (or @base), after @below from 0 */
	const char *name;
} from[FROM_COUNT] = {
	{ 0, 0, 0, "from 0" },
	{ 1 << 20, 0, 0, "from base 2^20" },
	{ 1 << 24, 0, 0, "from base 2^24" },
	{ 1 << 30, 0, 0, "from base 2^30" },
	{ 0, 1 << 24, 3, "from 2^24, beside IDs 0-2" },
};

/* One repeat: libidr's random lookup over N dense IDs from each base. */
static bool lookup_by_base(struct plan *pl, double ns[FROM_COUNT])
{
	static const struct flat no_flat; /* libidr's passes read no flat */
	bool ok = true;

	for (int f = 0; f < FROM_COUNT; f++) {
		struct idr idr;
		uint64_t sum = 0;

		int first = from[f].base + from[f].start;

		idr_init_base(&idr, from[f].base);
		for (int i = 0; i < from[f].below; i++)
			ok &= idr_alloc(&idr, &pl->obj[i], 0, 0, IDR_GFP_KERNEL) == i;
		for (long i = 0; i < pl->n; i++) {
			ok &= idr_alloc(&idr, &pl->obj[i], from[f].start, 0, IDR_GFP_KERNEL) == first + i;
			pl->key_rand[i] = (uint64_t)first + (uint64_t)pl->perm[i];
		}
		lookup_pass(&no_flat, &idr, C_LIBIDR, pl->key_rand, pl->n, &sum);
		ns[f] = lookup_pass(&no_flat, &idr, C_LIBIDR, pl->key_rand, pl->n, &sum);
		ok &= sum == pl->obj_sum;
		idr_destroy(&idr);
		libidr_settle();
	}
	return ok;
}

/* ---- output ---- */

static FILE *out_files[2];

static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...)
{
	for (int i = 0; i < 2; i++) {
		va_list ap;
		if (!out_files[i])
			continue;
		va_start(ap, fmt);
		vfprintf(out_files[i], fmt, ap);
		va_end(ap);
	}
}

static const char *const metric_names[M_COUNT] = {
	"dense alloc, ns/ID", "sequential lookup, ns", "random lookup, ns",
	"dependent-chain lookup, ns", "iterate all in ID order, ns/ID",
	"remove half + re-alloc, ns/op", "iterate after 99% removed, ns/survivor",
	"refill 99% holes, ns/ID", "cyclic remove+alloc, ns/op",
	"heap, dense, bytes/ID", "  self-reported, bytes/ID",
	"heap after 99% removed, B/survivor", "  self-reported, B/survivor",
};

static void print_core(double v[B_COUNT][M_COUNT])
{
	emit("| workload | libidr | flat | judy | libidr handles | libidr / flat | libidr / judy |\n");
	emit("|---|---:|---:|---:|---:|---:|---:|\n");
	for (int m = 0; m < M_COUNT; m++) {
		emit("| %s |", metric_names[m]);
		static const int order[B_COUNT] = { B_LIBIDR, B_FLAT, B_JUDY, B_HANDLES };
		for (int k = 0; k < B_COUNT; k++) {
			double x = v[order[k]][m];
			if (x < 0 || ((m == M_SELF_DENSE || m == M_SELF_SPARSE) && x == 0))
				emit(" - |");
			else
				emit(" %.2f |", x);
		}
		double l = v[B_LIBIDR][m], f = v[B_FLAT][m], j = v[B_JUDY][m];
		if (f > 0)
			emit(" %.2fx |", l / f);
		else
			emit(" - |");
		emit(j > 0 ? " %.2fx |\n" : " - |\n", l / j);
	}
}

struct target {
	const char *what;
	double got;
	double limit;
	bool at_most; /* got must be <= limit (else >=) */
	const char *unit;
};

static void print_targets(const struct target *t, int k)
{
	emit("\n| target | measured | limit | |\n|---|---:|---:|---|\n");
	for (int i = 0; i < k; i++) {
		bool met = t[i].at_most ? t[i].got <= t[i].limit : t[i].got >= t[i].limit;
		emit("| %s | %.2f%s | %s %.2f%s | %s", t[i].what, t[i].got, t[i].unit,
		     t[i].at_most ? "<=" : ">=", t[i].limit, t[i].unit,
		     met ? "met" : "MISSED");
		if (!met) {
			double by = 100 * (t[i].at_most ? t[i].got / t[i].limit - 1 :
						    1 - t[i].got / t[i].limit);
			emit(by < 1 ? " by %.2f%%" : " by %.0f%%", by); /* never "by 0%" */
		}
		emit(" |\n");
	}
}

/* The read-scaling targets of one section size @b of @rs. */
#define RS_TARGETS(rs, b, what)                                                           \
	{ "RCU 2 readers vs 1, fixed-rate writer, " what, rs[b][0].two_vs_one[0], 1.8, false, "x" }, \
	{ "RCU 2 readers vs 1, writer flat out, " what, rs[b][1].two_vs_one[0], 1.8, false, "x" },  \
	{ "RCU vs rwlock, 2 readers, fixed-rate writer, " what, rs[b][0].rcu_vs_rwlock, 3.0, false, "x" }, \
	{ "RCU vs rwlock, 2 readers, writer flat out, " what, rs[b][1].rcu_vs_rwlock, 3.0, false, "x" }

/* Every read-scaling setup, into @rs[lookups a section: 1, 16][writer:
 * fixed-rate, flat out], and its table. */
static void read_scaling_table(long n, int repeats, struct scaling rs[2][2])
{
	emit("\n| read scaling, N IDs, one writer churning | 1 reader, lookups/s | 2 readers | 2 vs 1 (median of ratios) | writer ops/s (1 / 2 readers) |\n|---|---:|---:|---:|---:|\n");
	for (int b = 0; b < 2; b++)
		for (int mode = 0; mode < 2; mode++) {
			static const char *const how[] = { "writer at %d ops/s", "writer flat out" };
			static const char *const lock[] = { "RCU", "rwlock" };
			char label[64];
			rs_batch = b ? 16 : 1;
			rs_rate = mode ? 0 : WRITES_PER_SEC;
			snprintf(label, sizeof(label), how[mode], WRITES_PER_SEC);
			struct scaling *sc = &rs[b][mode];
			read_scaling(n, repeats, sc);
			for (int rw = 0; rw < 2; rw++)
				emit("| %s, %d lookup%s a section, %s | %.3g | %.3g | %.2fx | %.3g / %.3g |\n",
				     lock[rw], rs_batch, b ? "s" : "", label, sc->rate[rw][0],
				     sc->rate[rw][1], sc->two_vs_one[rw], sc->writes[rw][0],
				     sc->writes[rw][1]);
			emit("| RCU vs rwlock, 2 readers | | %.2fx | | |\n", sc->rcu_vs_rwlock);
		}
}

/* bench --read-scaling: only the read-scaling table and its targets, a
 * quick way to compare read-side sections. */
static int read_scaling_only(long n, int repeats)
{
	struct scaling rs[2][2];

	emit("\n## Read scaling\n");
	read_scaling_table(n, repeats, rs);
	const struct target targets[] = {
		RS_TARGETS(rs, 0, "1 lookup a section"),
		RS_TARGETS(rs, 1, "16 lookups a section"),
	};
	print_targets(targets, (int)(sizeof(targets) / sizeof(targets[0])));
	return 0;
}

/* ns/op against N for dense alloc and random lookup: a data file and, if
 * gnuplot is there, an SVG. */
static void plot(const struct plan *pl, const char *dir, long max_n)
{
	static const int order[] = { B_LIBIDR, B_FLAT, B_JUDY, B_HANDLES };
	char path[512];

	snprintf(path, sizeof(path), "%s/scaling.dat", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "# N alloc(libidr flat judy handles) lookup(libidr flat judy handles), ns/op\n");
	for (long n = 1000; n <= max_n; n *= 10) {
		double a[4], l[4];
		for (int k = 0; k < 4; k++) {
			double va[3], vl[3];
			for (int r = 0; r < 3; r++)
				backends[order[k]].scaling(pl, n, &va[r], &vl[r]);
			a[k] = median(va, 3);
			l[k] = median(vl, 3);
		}
		fprintf(f, "%ld %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f\n", n, a[0],
			a[1], a[2], a[3], l[0], l[1], l[2], l[3]);
	}
	fclose(f);
	snprintf(path, sizeof(path),
		 "command -v gnuplot >/dev/null && cd %s && gnuplot ../plot.gp", dir);
	if (system(path) != 0)
		fprintf(stderr, "bench: no gnuplot; data in %s/scaling.dat\n", dir);
}

int main(int argc, char **argv)
{
	long n = 1000000;
	int repeats = 5;
	const char *dir = NULL;
	bool large = false, rs_only = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atol(argv[++i]);
		else if (!strcmp(argv[i], "-r") && i + 1 < argc)
			repeats = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--large"))
			large = true;
		else if (!strcmp(argv[i], "--quick"))
			n = 100000, repeats = 3;
		else if (!strcmp(argv[i], "--plot") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--read-scaling"))
			rs_only = true;
		else {
			fprintf(stderr, "usage: %s [-n N] [-r repeats] [--large] [--quick] [--plot DIR] [--read-scaling]\n", argv[0]);
			return 2;
		}
	}
	if (large)
		n = 10000000;
	if (repeats < 1 || repeats > MAX_REPEATS || n < 1000 || n > INT_MAX / 2) {
		fprintf(stderr, "bench: bad -n or -r\n");
		return 2;
	}
	out_files[0] = stdout;
	if (dir) {
		char path[512];
		snprintf(path, sizeof(path), "%s/latest.md", dir);
		out_files[1] = fopen(path, "w");
	}

	/* liburcu allocates its call_rcu worker's state once, on first use:
	 * let that happen before anything is measured. */
	struct idr warm;
	idr_init(&warm);
	idr_alloc(&warm, &warm, 0, 0, IDR_GFP_KERNEL);
	idr_remove(&warm, 0);
	libidr_settle();

	if (rs_only) {
		int rc = read_scaling_only(n, repeats);
		if (out_files[1])
			fclose(out_files[1]);
		return rc;
	}

	struct plan pl;
	make_plan(&pl, n);
	bool ok = true;

	/* Empty structures hold nothing. */
	long h0 = heap_bytes();
	struct idr e;
	struct ida ea;
	idr_init(&e);
	ida_init(&ea);
	long empty_bytes = heap_bytes() - h0;

	emit("## libidr bench: N = %ld, median of %d runs\n\n", n, repeats);
	double core[B_COUNT][M_COUNT];
	ok &= run_core(&pl, repeats, core);
	print_core(core);

	double call[2][C_HOW];
	ok &= call_cost(&pl, repeats, call);
	emit("\n| cost of a call | flat inlined | flat called | called / inlined | libidr | libidr / flat called |\n");
	emit("|---|---:|---:|---:|---:|---:|\n");
	for (int k = 0; k < 2; k++) {
		const double *c = call[k];
		emit("| %s | %.2f | %.2f | %.2fx | %.2f | %.2fx |\n", metric_names[k ? M_RAND : M_SEQ],
		     c[C_INLINE], c[C_CALL], c[C_CALL] / c[C_INLINE], c[C_LIBIDR],
		     c[C_LIBIDR] / c[C_CALL]);
	}

	double by_from[FROM_COUNT][MAX_REPEATS];
	for (int r = 0; r < repeats; r++) {
		double ns[FROM_COUNT];
		ok &= lookup_by_base(&pl, ns);
		for (int f = 0; f < FROM_COUNT; f++)
			by_from[f][r] = ns[f];
	}
	emit("\n| libidr random lookup, N dense IDs | ns | vs from 0 (median of ratios) |\n");
	emit("|---|---:|---:|\n");
	for (int f = 0; f < FROM_COUNT; f++)
		emit("| %s | %.2f | %.2fx |\n", from[f].name, median(by_from[f], repeats),
		     median_ratio(by_from[f], by_from[0], repeats));

	double ida[3][I_COUNT];
	for (int b = 0; b < 3; b++) {
		double v[I_COUNT][MAX_REPEATS];
		for (int r = 0; r < repeats; r++) {
			double s[I_COUNT];
			if (!ida_runs[b](&pl, s)) {
				fprintf(stderr, "bench: ida %s gave a wrong result\n", ida_names[b]);
				ok = false;
			}
			for (int m = 0; m < I_COUNT; m++)
				v[m][r] = s[m];
		}
		for (int m = 0; m < I_COUNT; m++)
			ida[b][m] = median(v[m], repeats);
	}
	emit("\n| ida workload | libidr ida | flat bitmap | judy1 | libidr / flat | libidr / judy |\n");
	emit("|---|---:|---:|---:|---:|---:|\n");
	static const char *const ida_rows[I_COUNT] = {
		"dense alloc, ns/ID", "random free + alloc, ns/op", "heap, dense, bytes/ID" };
	for (int m = 0; m < I_COUNT; m++)
		emit("| %s | %.3f | %.3f | %.3f | %.2fx | %.2fx |\n", ida_rows[m], ida[0][m],
		     ida[1][m], ida[2][m], ida[0][m] / ida[1][m], ida[0][m] / ida[2][m]);

	double seed[SEED_ROWS], v3[SEED_ROWS][MAX_REPEATS];
	for (int r = 0; r < repeats; r++) {
		ok &= seed_run(&pl, 1, PLAIN, &v3[0][r]);
		ok &= seed_run(&pl, 1, LOCKED, &v3[1][r]);
		ok &= seed_run(&pl, 1, SEED, &v3[2][r]);
		ok &= seed_run(&pl, 2, SEED, &v3[3][r]);
		ok &= seed_run(&pl, 1, LOCK_PAIR, &v3[4][r]);
		ok &= seed_run(&pl, 2, SEED_MUTEX, &v3[5][r]);
	}
	for (int k = 0; k < SEED_ROWS; k++)
		seed[k] = median(v3[k], repeats);
	/* Ratios within a repeat, then their median, as for read scaling:
	 * plain allocation's time swings with the host from one second to
	 * the next, and a ratio of medians pairs runs far apart. */
	double locked_plain = median_ratio(v3[1], v3[0], repeats);
	double seed_plain = median_ratio(v3[2], v3[0], repeats);
	double seed_locked = median_ratio(v3[2], v3[1], repeats);
	emit("\n| seed pattern (preload, lock, alloc NOWAIT, unlock, preload_end) | ns/ID |\n|---|---:|\n");
	emit("| plain idr_alloc, no preload, no lock | %.2f |\n", seed[0]);
	emit("| idr_alloc under idr_lock, no preload | %.2f (%.2fx plain) |\n", seed[1], locked_plain);
	emit("| seed pattern, 1 thread | %.2f (%.2fx plain, %.2fx locked) |\n", seed[2],
	     seed_plain, seed_locked);
	emit("| seed pattern, 2 threads, one idr (wall time / IDs) | %.2f |\n", seed[3]);
	emit("| the same with a pthread mutex instead of idr_lock | %.2f (idr_lock: %.2fx) |\n",
	     seed[5], median_ratio(v3[3], v3[5], repeats));
	/* The target allows the seed pattern 0.5x plain on top of the
	 * allocation; this row shows what the lock alone takes of that. */
	emit("| idr_lock + idr_unlock alone, no allocation | %.2f (%.2fx plain) |\n", seed[4],
	     median_ratio(v3[4], v3[0], repeats));

	struct scaling rs[2][2];
	read_scaling_table(n, repeats, rs);

	emit("\n| handle mode (IDR_F_HANDLES) vs plain | plain | handles | cost |\n|---|---:|---:|---:|\n");
	static const int hm[] = { M_DENSE, M_RAND, M_CHAIN, M_BYTES_DENSE };
	for (int k = 0; k < 4; k++)
		emit("| %s | %.2f | %.2f | %.2fx |\n", metric_names[hm[k]],
		     core[B_LIBIDR][hm[k]], core[B_HANDLES][hm[k]],
		     core[B_HANDLES][hm[k]] / core[B_LIBIDR][hm[k]]);

	const struct target targets[] = {
		{ "dense alloc vs flat", core[B_LIBIDR][M_DENSE] / core[B_FLAT][M_DENSE], 2.0, true, "x" },
		{ "dense alloc: judy / libidr", core[B_JUDY][M_DENSE] / core[B_LIBIDR][M_DENSE], 10.0, false, "x" },
		{ "random lookup vs flat", core[B_LIBIDR][M_RAND] / core[B_FLAT][M_RAND], 1.5, true, "x" },
		{ "sequential lookup vs flat", core[B_LIBIDR][M_SEQ] / core[B_FLAT][M_SEQ], 2.0, true, "x" },
		{ "half-remove + re-alloc vs flat", core[B_LIBIDR][M_HALF] / core[B_FLAT][M_HALF], 2.5, true, "x" },
		{ "heap per ID, dense", core[B_LIBIDR][M_BYTES_DENSE], 8.6, true, " B" },
		{ "heap per survivor, 99% removed", core[B_LIBIDR][M_BYTES_SPARSE], 32, true, " B" },
		{ "empty idr + empty ida", (double)empty_bytes, 0, true, " B" },
		{ "ida heap per ID, dense", ida[0][I_BYTES], 0.15, true, " B" },
		{ "seed pattern vs plain alloc, 1 thread", seed_plain, 1.5, true, "x" },
		RS_TARGETS(rs, 0, "1 lookup a section"),
		RS_TARGETS(rs, 1, "16 lookups a section"),
	};
	print_targets(targets, (int)(sizeof(targets) / sizeof(targets[0])));
	if (!ok)
		emit("\n**Some workload returned a wrong result: the figures above are void.**\n");
	if (out_files[1])
		fclose(out_files[1]);
	if (dir)
		plot(&pl, dir, large ? 10000000 : 1000000);
	idr_destroy(&e);
	ida_destroy(&ea);
	return ok ? 0 : 1;
}
