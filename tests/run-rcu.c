/* SPDX-License-Identifier: MIT */
/*
 * Lockless readers against a writer.  Every object records the ID it was
 * stored under; a reader that ever sees an object under another ID, or a
 * freed one (ASan), has caught a broken publish or an early free.  Objects
 * and nodes are both freed only after a grace period.
 *
 * Not run under ThreadSanitizer: TSan cannot see liburcu's grace periods
 * (they are built from membarrier and uninstrumented atomics), so it would
 * report the RCU-protected frees as races.  run-threads covers the writer
 * lock under TSan.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../src/internal.h" /* which kind of directory an idr has */
#include "testutil.h"

#define SPACE 1000000

static int anchor;
#define P_OBJ ((void *)&anchor)

struct obj {
	unsigned long id;
	unsigned long magic;
	struct idr_rcu_head rcu;
};

#define MAGIC 0x1d1d1d1dUL

static void free_obj(struct idr_rcu_head *head)
{
	struct obj *o = (struct obj *)(void *)((char *)head - offsetof(struct obj, rcu));

	o->magic = 0;
	free(o);
}

static struct obj *new_obj(unsigned long id)
{
	struct obj *o = malloc(sizeof(*o));

	if (!o)
		abort();
	o->id = id;
	o->magic = MAGIC;
	return o;
}

struct shared {
	struct idr idr;
	volatile int stop;
	int started; /* readers running: the writer waits for them */
	long bad, reads, hits;
};

static bool valid(const struct obj *o, unsigned long id)
{
	return o->magic == MAGIC && o->id == id;
}

static void *reader(void *arg)
{
	struct shared *s = arg;
	uint64_t rng = (uint64_t)(uintptr_t)&rng | 1;
	long bad = 0, reads = 0, hits = 0;

	__atomic_add_fetch(&s->started, 1, __ATOMIC_RELAXED);
	do {
		idr_rcu_read_lock();
		for (int i = 0; i < 64; i++) {
			unsigned long id = tu_rand(&rng) % SPACE;
			struct obj *o = idr_find(&s->idr, id);
			if (o) {
				hits++;
				bad += !valid(o, id);
			}
			int next = (int)id;
			o = idr_get_next(&s->idr, &next);
			if (o) {
				hits++;
				bad += !valid(o, (unsigned long)next) ||
				       next < (int)id;
			}
			reads += 2;
		}
		idr_rcu_read_unlock();
	} while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED));
	__atomic_add_fetch(&s->bad, bad, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->reads, reads, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->hits, hits, __ATOMIC_RELAXED);
	return NULL;
}

static void retire(struct obj *o)
{
	if (o)
		idr_call_rcu(&o->rcu, free_obj);
}

/* Random alloc / replace / remove over the whole space; every so often the
 * tree is emptied so its height collapses and regrows. */
static long churn(struct shared *s, long ops, uint64_t seed)
{
	uint64_t rng = seed;
	long errors = 0;

	for (long i = 0; i < ops; i++) {
		unsigned long id = tu_rand(&rng) % SPACE;
		unsigned r = (unsigned)(tu_rand(&rng) % 10);

		if (i % 50000 == 49999) {
			struct obj *o;
			int k;
			idr_lock(&s->idr);
			idr_for_each_entry(&s->idr, o, k)
				retire(idr_remove(&s->idr, (unsigned)k));
			errors += !idr_is_empty(&s->idr);
			idr_unlock(&s->idr);
			continue;
		}
		idr_preload(IDR_GFP_KERNEL);
		idr_lock(&s->idr);
		if (r < 5) {
			/* reserve, then publish: readers never see the object
			 * before its ID is in it */
			int got = idr_alloc(&s->idr, NULL, (int)id, SPACE, IDR_GFP_NOWAIT);
			if (got >= 0)
				errors += idr_replace(&s->idr, new_obj((unsigned)got),
						      (unsigned)got) != NULL;
			else
				errors += got != -ENOSPC;
		} else if (r < 7) {
			struct obj *old = idr_find(&s->idr, id);
			if (old) {
				void *was = idr_replace(&s->idr, new_obj(id), id);
				errors += was != old;
				retire(old);
			}
		} else {
			retire(idr_remove(&s->idr, id));
		}
		idr_unlock(&s->idr);
		idr_preload_end();
	}
	return errors;
}

static void wait_for_readers(struct shared *s, int n)
{
	while (__atomic_load_n(&s->started, __ATOMIC_RELAXED) < n)
		sched_yield();
}

static void drain(struct shared *s)
{
	struct obj *o;
	int k;

	idr_for_each_entry(&s->idr, o, k)
		retire(o);
	idr_destroy(&s->idr);
	idr_rcu_barrier();
}

TEST(readers_see_only_stored_values_while_writer_churns)
{
	struct shared s = { .stop = 0 };
	pthread_t r[2];

	idr_init(&s.idr);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&r[i], NULL, reader, &s), 0);
	wait_for_readers(&s, 2);
	long errors = churn(&s, tu_scale(400000), 42);
	s.stop = 1;
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_join(r[i], NULL), 0);
	drain(&s);
	CHECK_EQ(errors, 0);
	CHECK_EQ(s.bad, 0);
	CHECK(s.reads > 0);
	CHECK(s.hits > 0); /* the readers did meet live objects */
}

static void *seed_writer(void *arg)
{
	struct shared *s = arg;
	long errors = 0;

	for (int i = 0; i < tu_scale(50000); i++) {
		idr_preload(IDR_GFP_KERNEL);
		idr_lock(&s->idr);
		tu_fail_thread(true);
		int id = idr_alloc(&s->idr, NULL, 0, SPACE, IDR_GFP_NOWAIT);
		if (id >= 0)
			idr_replace(&s->idr, new_obj((unsigned)id), (unsigned)id);
		else
			errors++;
		if (i % 2)
			retire(idr_remove(&s->idr, (unsigned long)(i * 7919 % (id + 1))));
		tu_fail_thread(false);
		idr_unlock(&s->idr);
		idr_preload_end();
	}
	return (void *)(intptr_t)errors;
}

TEST(seed_pattern_with_lockless_readers)
{
	struct shared s = { .stop = 0 };
	pthread_t r[2], w[2];

	idr_init(&s.idr);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&r[i], NULL, reader, &s), 0);
	wait_for_readers(&s, 2);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&w[i], NULL, seed_writer, &s), 0);
	long errors = 0;
	for (int i = 0; i < 2; i++) {
		void *ret;
		CHECK_EQ(pthread_join(w[i], &ret), 0);
		errors += (intptr_t)ret;
	}
	s.stop = 1;
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_join(r[i], NULL), 0);
	drain(&s);
	CHECK_EQ(errors, 0); /* no -ENOMEM with every locked allocation failing */
	CHECK_EQ(s.bad, 0);
}

TEST(removed_nodes_wait_for_readers)
{
	struct idr idr;

	idr_init(&idr);
	/* 2^17: height 3, and offset 0 of its leaf, so a full leaf */
	CHECK_EQ(idr_alloc(&idr, P_OBJ, 1 << 17, 0, IDR_GFP_KERNEL), 1 << 17);
	idr_preload_drain();
	long live = tu_live();
	idr_rcu_read_lock();
	void *seen = idr_find(&idr, 1 << 17);
	CHECK(idr_remove(&idr, 1 << 17) == seen);
	/* the path is unlinked but must not be freed inside our section */
	CHECK_EQ(idr_memory_usage(&idr), 0);
	CHECK_EQ(tu_live(), live);
	idr_rcu_read_unlock();
	idr_rcu_barrier();
	CHECK_EQ(tu_live(), live - 3); /* height 3: three nodes */
}

/* Writers on their own idrs retire nodes into the one process-wide list
 * while another thread keeps asking for a barrier: each barrier returns,
 * and the last leaves nothing allocated. */
struct retirer {
	long rounds;
	pthread_t thread;
};

static void *retire_rounds(void *arg)
{
	struct retirer *r = arg;
	uint64_t rng = (uint64_t)r->rounds * 7919 + (uintptr_t)arg;

	for (long round = 0; round < r->rounds; round++) {
		struct idr idr;
		idr_init(&idr);
		for (int i = 0; i < 300; i++)
			idr_alloc(&idr, P_OBJ, 0, 0, IDR_GFP_KERNEL);
		/* leaves empty, go compact or single, and the tree shrinks */
		for (int i = 0; i < 300; i++)
			idr_remove(&idr, (unsigned long)(tu_rand(&rng) % 300));
		idr_destroy(&idr); /* what is left: one subtree entry */
	}
	idr_preload_drain();
	return NULL;
}

TEST(nodes_retired_from_many_threads_are_all_freed)
{
	struct retirer r[3];
	long live = tu_settled_live();

	for (int t = 0; t < 3; t++) {
		r[t].rounds = tu_scale(2000);
		CHECK(pthread_create(&r[t].thread, NULL, retire_rounds, &r[t]) == 0);
	}
	for (int b = 0; b < 50; b++)
		idr_rcu_barrier();
	for (int t = 0; t < 3; t++)
		pthread_join(r[t].thread, NULL);
	CHECK_EQ(tu_settled_live(), live);
}

/* A reader that holds a section open until told to leave (held_release),
 * or, when held_for_ms is set, for that long at most, and records that it
 * left just before it does. */
static int held_in, held_release, held_left;
static long held_for_ms;

static long ms_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void *hold_until_released(void *arg)
{
	long until = held_for_ms ? ms_now() + held_for_ms : 0;

	(void)arg;
	idr_rcu_read_lock();
	__atomic_store_n(&held_in, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&held_release, __ATOMIC_SEQ_CST) &&
	       (!until || ms_now() < until))
		sched_yield();
	__atomic_store_n(&held_left, 1, __ATOMIC_SEQ_CST);
	idr_rcu_read_unlock();
	return NULL;
}

static void hold_start(pthread_t *t)
{
	held_in = held_release = held_left = 0;
	if (pthread_create(t, NULL, hold_until_released, NULL))
		abort();
	while (!__atomic_load_n(&held_in, __ATOMIC_SEQ_CST))
		sched_yield();
}

/* The rest of a fork, after idr_fork_prepare(): the child runs @child and
 * exits with what it returns; the parent finishes its side and waits.  The
 * child's wait status (0: it exited with 0), or -1 if there was none. */
static int fork_and_wait(int (*child)(void))
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		tu_child_exit(child());
	idr_fork_parent();
	return pid > 0 && waitpid(pid, &status, 0) == pid ? status : -1;
}

/* fork() with idr_fork_prepare() / idr_fork_parent() / idr_fork_child():
 * the child frees a batch the parent had queued, and what it retires
 * itself, though another parent thread was inside a read-side section at
 * the fork.  Without the calls the child's barrier never returns (the
 * alarm ends it). */
static int child_after_fork(struct idr *idr, long live)
{
	idr_fork_child();
	alarm(30);
	for (int i = 0; i < 4096; i++)
		if (idr_alloc(idr, P_OBJ, 0, 0, IDR_GFP_KERNEL) < 0)
			return 1;
	for (unsigned long i = 0; i < 4096; i += 2)
		if (idr_remove(idr, i) != P_OBJ)
			return 2;
	idr_destroy(idr);
	return tu_settled_live() == live ? 0 : 3;
}

TEST(a_forked_child_frees_what_was_queued_and_what_it_retires)
{
	struct idr idr;
	pthread_t reader;
	int status;

	if (tu_fork_cannot_thread())
		return;
	long live = tu_settled_live();
	idr_init(&idr);
	for (int i = 0; i < 4096; i++)
		CHECK_EQ(idr_alloc(&idr, P_OBJ, 0, 0, IDR_GFP_KERNEL), i);
	/* If liburcu's worker is already in the batch's grace period, waiting
	 * for this reader, idr_fork_prepare() waits for that grace period to
	 * end (the worker must pause first): so the reader leaves on its own
	 * after a second, and the fork follows it.  Natively the fork came
	 * first in every run seen; under valgrind the worker can be first. */
	held_for_ms = 1000;
	hold_start(&reader);
	held_for_ms = 0;
	long wrong = 0; /* checked once the reader is out: a CHECK returns */
	for (unsigned long i = 0; i < 4096; i++)
		wrong += idr_remove(&idr, i) != P_OBJ; /* queued, held back by the reader */
	idr_fork_prepare();
	pid_t pid = fork();
	if (pid == 0)
		tu_child_exit(child_after_fork(&idr, live));
	idr_fork_parent();
	pid_t waited = pid > 0 ? waitpid(pid, &status, 0) : -1;
	__atomic_store_n(&held_release, 1, __ATOMIC_SEQ_CST);
	pthread_join(reader, NULL);
	idr_destroy(&idr);
	CHECK_EQ(wrong, 0);
	CHECK(pid > 0);
	CHECK_EQ(waited, pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
}

/* Forks while another thread queues callbacks and retires nodes as fast
 * as it can, on an idr of its own: with idr_fork_prepare() the child never
 * inherits a half-queued callback or a batch taken and not queued, either
 * of which would keep the child's idr_fork_child() or idr_rcu_barrier()
 * from returning (the alarm ends such a child).  The child's own idr
 * frees everything it retires. */
static int churn_stop;
static long churned, churn_queued; /* callbacks queued and not yet run */

static void free_churned(struct idr_rcu_head *head)
{
	__atomic_sub_fetch(&churn_queued, 1, __ATOMIC_RELAXED);
	free(head);
}

static struct idr churn_idr;

static void *churn_retires(void *arg)
{
	struct idr *idr = &churn_idr;
	long n = 0;

	(void)arg;
	idr_init(idr);
	while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
		/* no more queued than a child can run through at once */
		if (__atomic_load_n(&churn_queued, __ATOMIC_RELAXED) > 1000) {
			sched_yield();
			continue;
		}
		struct idr_rcu_head *h = malloc(sizeof(*h));
		if (!h)
			abort();
		__atomic_add_fetch(&churn_queued, 1, __ATOMIC_RELAXED);
		idr_call_rcu(h, free_churned);
		/* a leaf made and emptied: a node retired, and on the way
		 * down a compact leaf too */
		idr_lock(idr);
		for (int i = 0; i < 8; i++)
			if (idr_alloc(idr, P_OBJ, 64 * 64, 0, IDR_GFP_KERNEL) < 0)
				abort();
		for (unsigned long i = 64 * 64; i < 64 * 64 + 8; i++)
			idr_remove(idr, i);
		idr_unlock(idr);
		n++;
	}
	idr_destroy(idr);
	__atomic_store_n(&churned, n, __ATOMIC_RELAXED);
	return NULL;
}

static int child_of_a_busy_parent(void)
{
	struct idr idr;

	alarm(20);
	idr_fork_child();
	idr_init(&idr);
	for (int i = 0; i < 200; i++)
		if (idr_alloc(&idr, P_OBJ, 64 * i, 0, IDR_GFP_KERNEL) != 64 * i)
			return 1;
	for (unsigned long i = 0; i < 200; i++)
		idr_remove(&idr, 64 * i);
	struct idr_rcu_head *h = malloc(sizeof(*h));
	if (!h)
		return 2;
	idr_call_rcu(h, free_churned);
	idr_rcu_barrier();
	return idr_is_empty(&idr) && idr_memory_usage(&idr) == 0 ? 0 : 3;
}

TEST(forks_amid_another_threads_retires_leave_the_child_working)
{
	pthread_t churner;
	long forks = tu_scale(200), bad = 0;

	if (tu_fork_cannot_thread())
		return;
	/* valgrind checks each child for leaks at its exit, and a child cannot
	 * free the churning thread's preload stash (idr_lock(3)). */
	if (tu_valgrind())
		return;
	/* gcc 12's AddressSanitizer does not hold its allocator's locks
	 * across fork(), unlike glibc's malloc: a child forked while the churning
	 * thread is inside malloc() hangs in its own first malloc() (seen in
	 * one fork of 200 in some runs: a stack in asan's SizeClassAllocator64
	 * mutex).  The plain, clang and hooks runs cover forking. */
	if (tu_asan())
		return;
	churn_stop = 0;
	CHECK_EQ(pthread_create(&churner, NULL, churn_retires, NULL), 0);
	for (long k = 0; k < forks; k++) {
		idr_fork_prepare();
		int status = fork_and_wait(child_of_a_busy_parent);
		if (status) {
			fprintf(stderr, "    fork %ld: child %s %d\n", k,
				status > 0 && WIFSIGNALED(status) ? "killed by signal" : "exited",
				status > 0 && WIFSIGNALED(status) ? WTERMSIG(status) :
				status > 0 ? WEXITSTATUS(status) : -1);
			bad++;
		}
	}
	__atomic_store_n(&churn_stop, 1, __ATOMIC_RELAXED);
	CHECK_EQ(pthread_join(churner, NULL), 0);
	idr_rcu_barrier();
	CHECK_EQ(bad, 0);
	CHECK(churned > 0);
}

/* ---- sparse leaves: lanes reused under lockless readers ---- */

#define LEAVES 512
#define OFFS 7 /* offsets 1..7: leaves go singleton, compact, full, back */

/* Two readers racing a writer on one idr: each looks up IDs from @pick,
 * and the next entry from each, @per_section to a read-side section, and
 * every 16th section walks the whole idr with idr_for_each(); it counts
 * every object it finds under an ID that is not the object's own, every
 * walk out of order, and every walk that misses ID @keep (>= 0), which
 * the writer never removes. */
struct race {
	struct idr *idr;
	unsigned long (*pick)(uint64_t *rng);
	int per_section;
	long keep;
	int stop;
	pthread_t thread[2];
	long bad[2];
	bool stepwise; /* walk with idr_get_next(), a section per entry, instead */
};

struct walk {
	long last; /* the last ID visited, -1 before the first */
	bool wrong, saw_keep;
	long keep;
};

static int walk_visit(int id, void *p, void *data)
{
	struct walk *w = data;
	const struct obj *o = p;

	w->wrong |= o->id != (unsigned long)id || id <= w->last;
	w->saw_keep |= id == w->keep;
	w->last = id;
	return 0;
}

/* What one section of @r's reader gets wrong. */
static long race_section(const struct race *r, uint64_t *rng, bool walk)
{
	long bad = 0;

	for (int i = 0; i < r->per_section; i++) {
		unsigned long id = r->pick(rng);
		const struct obj *o = idr_find(r->idr, id);
		bad += o && o->id != id; /* another ID's object */
		int next = (int)id;
		o = idr_get_next(r->idr, &next);
		bad += o && (o->id != (unsigned long)next || next < (int)id);
	}
	if (walk) {
		struct walk w = { -1, false, false, r->keep };
		idr_for_each(r->idr, walk_visit, &w);
		bad += w.wrong || (r->keep >= 0 && !w.saw_keep);
	}
	return bad;
}

/* What a walk of @r's idr with idr_get_next() gets wrong, each call in a
 * read-side section of its own, as a reader that drops the read lock
 * between entries does: each call may resume at the twig the one before
 * left it, in another section.  Between calls it waits for the nodes
 * retired so far to be freed, so that a twig that left the tree while it
 * was outside is gone by the next call. */
static long stepwise_walk(const struct race *r)
{
	long bad = 0;

	for (int id = 0, last = -1;; last = id++) {
		idr_rcu_read_lock();
		const struct obj *o = idr_get_next(r->idr, &id);
		bool wrong = o && (o->id != (unsigned long)id || id <= last);
		idr_rcu_read_unlock();
		if (!o)
			return bad;
		bad += wrong;
		idr_rcu_barrier();
	}
}

struct racer {
	struct race *race;
	int n;
};

static void *race_reader(void *arg)
{
	const struct racer *me = arg;
	struct race *r = me->race;
	uint64_t rng = (uint64_t)me->n * 7919 + 1;
	long bad = 0;

	for (long n = 0; !__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE); n++) {
		if (r->stepwise) {
			bad += stepwise_walk(r);
			continue;
		}
		idr_rcu_read_lock();
		bad += race_section(r, &rng, n % 16 == 15);
		idr_rcu_read_unlock();
	}
	r->bad[me->n] = bad;
	return NULL;
}

static bool race_start(struct race *r, struct racer me[2])
{
	for (int i = 0; i < 2; i++) {
		me[i] = (struct racer){ r, i };
		if (pthread_create(&r->thread[i], NULL, race_reader, &me[i]))
			return false;
	}
	return true;
}

/* Stop the readers; how many wrong objects they saw. */
static long race_stop(struct race *r)
{
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(r->thread[i], NULL);
	return r->bad[0] + r->bad[1];
}

static struct obj fixed_objs[LEAVES * 64];

static unsigned long sparse_id(uint64_t *rng)
{
	return (tu_rand(rng) % LEAVES) * 64 + 1 + tu_rand(rng) % OFFS;
}

TEST(sparse_lanes_never_show_another_ids_object)
{
	/* static: a failed check returns while the readers still run */
	static struct idr idr;
	static struct race race = { &idr, sparse_id, 1, 0, 0, { 0 }, { 0, 0 }, false };
	static struct racer me[2];
	uint64_t rng = 17;

	for (unsigned long i = 0; i < LEAVES * 64; i++)
		fixed_objs[i].id = i;
	idr_init(&idr);
	/* ID 0 keeps every leaf below one root without being in the way. */
	CHECK_EQ(idr_alloc(&idr, &fixed_objs[0], 0, 0, IDR_GFP_KERNEL), 0);
	CHECK(race_start(&race, me));
	for (long step = 0; step < tu_scale(2000000); step++) {
		unsigned long id = sparse_id(&rng);
		if (!idr_remove(&idr, id))
			idr_alloc(&idr, &fixed_objs[id], (int)id, (int)id + 1,
				  IDR_GFP_KERNEL);
	}
	/* a lane read torn would show another ID's object */
	CHECK_EQ(race_stop(&race), 0);
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

/* ---- the lookup directory grown, replaced, dropped and moved under readers ---- */

#define DIR_SPACE (64 * 1024)
#define WIN_SPACE (1 << 18)
#define WIN_LIVE 4096

/* One object per ID, dir_objs[i].id == i, for both races below. */
static struct obj dir_objs[WIN_SPACE];

static void number_dir_objs(void)
{
	for (unsigned long i = 0; i < WIN_SPACE; i++)
		dir_objs[i].id = i;
}

static unsigned long dir_id(uint64_t *rng)
{
	return tu_rand(rng) % DIR_SPACE;
}

static unsigned long win_id(uint64_t *rng)
{
	return tu_rand(rng) % WIN_SPACE;
}

TEST(directory_changes_never_show_another_ids_object)
{
	static struct idr idr; /* static, as above */
	static struct race race = { &idr, dir_id, 16, -1, 0, { 0 }, { 0, 0 }, false };
	static struct racer me[2];
	uint64_t rng = 5;
	bool had_dir = false, lost_dir = false;

	number_dir_objs();
	idr_init(&idr);
	CHECK(race_start(&race, me));
	for (int round = 0; round < tu_scale(12); round++) {
		/* Dense: the directory is built and grows as leaves come. */
		for (long i = 0; i < DIR_SPACE; i++)
			if (!idr_find(&idr, (unsigned long)i))
				CHECK_EQ(idr_alloc(&idr, &dir_objs[i], (int)i, (int)i + 1,
						   IDR_GFP_KERNEL), i);
		had_dir |= idr.idr_dir != NULL;
		/* Then nearly empty, through the sparse forms: it goes.  (On a
		 * 32-bit host a lone ID takes a compact leaf, not a singleton,
		 * so the tree stays large enough to afford the directory
		 * unless fewer survive.) */
		for (long i = 0; i < DIR_SPACE; i++)
			if (tu_rand(&rng) % (TU_SINGLETONS ? 100 : 1000))
				idr_remove(&idr, (unsigned long)i);
		lost_dir |= idr.idr_dir == NULL;
		CHECK_EQ(idr_check(&idr), 0);
	}
	CHECK_EQ(race_stop(&race), 0);
	CHECK(had_dir && lost_dir);
	idr_destroy(&idr);
	idr_rcu_barrier();
}

/* ID 0 held, and a cyclic idr's live IDs climbing through [1, WIN_SPACE)
 * and wrapping: only a window affords to cover them, and it moves every
 * few leaves as they climb; readers racing the moves and the old windows'
 * retirement see only the right objects. */
TEST(window_moves_never_show_another_ids_object)
{
	static struct idr idr; /* static, as above */
	static struct race race = { &idr, win_id, 16, 0, 0, { 0 }, { 0, 0 }, false };
	static struct racer me[2];
	static unsigned long live[WIN_LIVE];
	unsigned long last = 0;
	long windows = 0;
	const struct leafdir *seen = NULL;

	number_dir_objs();
	idr_init(&idr);
	CHECK_EQ(idr_alloc(&idr, &dir_objs[0], 0, 1, IDR_GFP_KERNEL), 0);
	for (long i = 0; i < WIN_LIVE; i++) {
		live[i] = ++last;
		CHECK_EQ(idr_alloc_cyclic(&idr, &dir_objs[last], 1, WIN_SPACE, IDR_GFP_KERNEL),
			 last);
	}
	CHECK(race_start(&race, me));
	for (long r = 0; r < tu_scale(3) * WIN_SPACE; r++) {
		long h = r % WIN_LIVE;
		CHECK(idr_remove(&idr, live[h]) == &dir_objs[live[h]]);
		last = last + 1 < WIN_SPACE ? last + 1 : 1;
		CHECK_EQ(idr_alloc_cyclic(&idr, &dir_objs[last], 1, WIN_SPACE, IDR_GFP_KERNEL),
			 last);
		live[h] = last;
		const struct leafdir *d = dir_load(&idr);
		windows += d != seen && d && d->first > 0;
		seen = d;
		if (r % 65536 == 0)
			CHECK_EQ(idr_check(&idr), 0);
	}
	CHECK_EQ(race_stop(&race), 0);
	CHECK(windows > 40); /* about 60 a pass */
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
	idr_rcu_barrier();
}

/* ---- twigs leaving under a walk that resumes where it was ---- */

#define TWIGS 16
#define TWIG_IDS 4096

/* Whole twigs (the nodes above the leaves) emptied and filled again, so
 * that they leave the tree and new ones take their place, while readers
 * walk it one idr_get_next() per section: a walk resuming at a twig freed
 * since would read freed memory (ASan) or another node's entries. */
TEST(a_stepwise_walk_never_reads_a_twig_that_left)
{
	static struct idr idr; /* static, as above */
	static struct race race = { &idr, win_id, 0, -1, 0, { 0 }, { 0, 0 }, true };
	static struct racer me[2];
	static int count[TWIGS];
	uint64_t rng = 23;

	number_dir_objs();
	idr_init(&idr);
	/* ID 0 keeps the root; so does one at the far end. */
	CHECK_EQ(idr_alloc(&idr, &dir_objs[0], 0, 1, IDR_GFP_KERNEL), 0);
	CHECK_EQ(idr_alloc(&idr, &dir_objs[TWIGS * TWIG_IDS], TWIGS * TWIG_IDS, 0,
			   IDR_GFP_KERNEL), TWIGS * TWIG_IDS);
	CHECK(race_start(&race, me));
	for (long step = 0; step < tu_scale(200000); step++) {
		int t = (int)(tu_rand(&rng) % TWIGS), first = t * TWIG_IDS + 1;
		if (count[t]) { /* empty it: the twig leaves */
			void *o;
			for (int id = first; (o = idr_get_next(&idr, &id)) && id < first + TWIG_IDS - 1;
			     id++)
				CHECK(idr_remove(&idr, (unsigned long)id) == o);
			count[t] = 0;
			continue;
		}
		for (int k = 0; k < 1 + (int)(tu_rand(&rng) % 12); k++) {
			int id = first + (int)(tu_rand(&rng) % (TWIG_IDS - 1));
			int got = idr_alloc(&idr, &dir_objs[id], id, id + 1, IDR_GFP_KERNEL);
			CHECK(got == id || got == -ENOSPC);
			count[t] += got == id;
		}
	}
	CHECK_EQ(race_stop(&race), 0);
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
	idr_rcu_barrier();
}

/* ---- grace periods for the caller's objects ---- */

/* Long enough that a wait which does not wait would be over. */
static void pause_a_while(void)
{
	struct timespec d = { 0, 50 * 1000 * 1000 };

	nanosleep(&d, NULL);
}

static int sync_result; /* 0: still waiting; 1: returned after the reader left; 2: before */

static void *synchronize(void *arg)
{
	(void)arg;
	idr_synchronize_rcu();
	__atomic_store_n(&sync_result, __atomic_load_n(&held_left, __ATOMIC_SEQ_CST) ? 1 : 2,
			 __ATOMIC_SEQ_CST);
	return NULL;
}

TEST(idr_synchronize_rcu_waits_for_a_section_open_when_it_was_called)
{
	pthread_t reader, waiter;

	sync_result = 0;
	hold_start(&reader);
	CHECK_EQ(pthread_create(&waiter, NULL, synchronize, NULL), 0);
	pause_a_while();
	int while_open = __atomic_load_n(&sync_result, __ATOMIC_SEQ_CST);
	__atomic_store_n(&held_release, 1, __ATOMIC_SEQ_CST);
	CHECK_EQ(pthread_join(reader, NULL), 0);
	CHECK_EQ(pthread_join(waiter, NULL), 0);
	CHECK_EQ(while_open, 0);
	CHECK_EQ(sync_result, 1);
	idr_synchronize_rcu(); /* and with no section open, it returns */
}

/* libidr runs liburcu-bp's read lock inline, from the headers it was built
 * with (src/readside.c); liburcu's own calls, in the installed library,
 * must see the same section, nested either way, and on a thread whose
 * first section is the library's as well as on one whose first is libidr's. */
static int sections_agree(int library_first)
{
	int ok = 1;

	if (library_first) {
		urcu_bp_read_lock();
		urcu_bp_read_unlock();
	}
	ok &= !urcu_bp_read_ongoing();
	idr_rcu_read_lock();
	ok &= urcu_bp_read_ongoing() != 0;
	urcu_bp_read_lock();
	idr_rcu_read_lock();
	idr_rcu_read_unlock();
	urcu_bp_read_unlock();
	ok &= urcu_bp_read_ongoing() != 0;
	idr_rcu_read_unlock();
	ok &= !urcu_bp_read_ongoing();
	urcu_bp_read_lock();
	idr_rcu_read_lock();
	urcu_bp_read_unlock();
	ok &= urcu_bp_read_ongoing() != 0;
	idr_rcu_read_unlock();
	ok &= !urcu_bp_read_ongoing();
	return ok;
}

static void *agree_on_new_thread(void *library_first)
{
	return (void *)(intptr_t)sections_agree(library_first != NULL);
}

TEST(sections_are_liburcu_bps_own)
{
	for (int library_first = 0; library_first < 2; library_first++) {
		pthread_t t;
		void *ok;

		CHECK_EQ(pthread_create(&t, NULL, agree_on_new_thread,
					library_first ? &anchor : NULL), 0);
		CHECK_EQ(pthread_join(t, &ok), 0);
		CHECK_EQ((intptr_t)ok, 1);
	}
	CHECK_EQ(sections_agree(0), 1);
}

#define DEFERRED 100

static struct idr_rcu_head deferred[DEFERRED];
static int deferred_ran[DEFERRED], deferred_order[DEFERRED], deferred_runs;

static void count_deferred(struct idr_rcu_head *head)
{
	__atomic_add_fetch(&deferred_ran[head - deferred], 1, __ATOMIC_SEQ_CST);
	deferred_order[head - deferred] = __atomic_fetch_add(&deferred_runs, 1, __ATOMIC_SEQ_CST);
}

static int deferred_total(void)
{
	int n = 0;

	for (int i = 0; i < DEFERRED; i++)
		n += __atomic_load_n(&deferred_ran[i], __ATOMIC_SEQ_CST);
	return n;
}

/* Calls queued while another thread's section is open (half of them from
 * inside a section of the caller's own) wait for it; once it has ended,
 * idr_rcu_barrier() returns only after each ran, once, with its own head,
 * in the order they were queued. */
TEST(idr_call_rcu_runs_each_callback_once_after_the_open_sections)
{
	pthread_t reader;

	hold_start(&reader);
	idr_rcu_read_lock();
	for (int i = 0; i < DEFERRED / 2; i++)
		idr_call_rcu(&deferred[i], count_deferred);
	idr_rcu_read_unlock();
	for (int i = DEFERRED / 2; i < DEFERRED; i++)
		idr_call_rcu(&deferred[i], count_deferred);
	pause_a_while();
	int while_open = deferred_total();
	__atomic_store_n(&held_release, 1, __ATOMIC_SEQ_CST);
	CHECK_EQ(pthread_join(reader, NULL), 0);
	idr_rcu_barrier();
	CHECK_EQ(while_open, 0);
	for (int i = 0; i < DEFERRED; i++) {
		CHECK_EQ(deferred_ran[i], 1);
		CHECK_EQ(deferred_order[i], i);
	}
}

/* What waits for a grace period is run, or freed, with nobody calling
 * idr_rcu_barrier(): a callback queued alone, and a compact leaf let go by
 * a removal that retires no node.  Each is the only item pushed, so it must
 * start a batch of its own. */
static int lone_ran;

static void run_lone(struct idr_rcu_head *head)
{
	(void)head;
	__atomic_store_n(&lone_ran, 1, __ATOMIC_SEQ_CST);
}

TEST(a_lone_callback_or_compact_leaf_needs_no_barrier)
{
	static struct idr_rcu_head head;
	struct idr idr;

	idr_call_rcu(&head, run_lone);
	for (int i = 0; i < 200 && !__atomic_load_n(&lone_ran, __ATOMIC_SEQ_CST); i++)
		pause_a_while();
	CHECK_EQ(__atomic_load_n(&lone_ran, __ATOMIC_SEQ_CST), 1);

	idr_init(&idr);
	CHECK_EQ(idr_alloc(&idr, P_OBJ, 1000, 0, IDR_GFP_KERNEL), 1000);
	idr_preload_drain();
	long single = tu_live();
	/* 1001 beside 1000 takes a compact leaf (on 32-bit hosts 1000 had
	 * one already); removing 1001 lets it go. */
	CHECK_EQ(idr_alloc(&idr, P_OBJ, 1001, 0, IDR_GFP_KERNEL), 1001);
	CHECK_EQ(tu_live() - single, TU_SINGLETONS ? 1 : 0);
	CHECK(idr_remove(&idr, 1001) == P_OBJ);
	for (int i = 0; i < 200 && tu_live() != single; i++)
		pause_a_while();
	CHECK_EQ(tu_live(), single);
	idr_destroy(&idr);
}

/* A callback queued with a barrier's marker, in the batch the marker is
 * in, has run, whole, when that idr_rcu_barrier() returns.  A reader holds
 * the batch before them back until both are queued. */
static struct idr_rcu_head first_head, slow_head;
static int slow_done, slow_seen;

static void ignore_head(struct idr_rcu_head *head)
{
	(void)head;
}

static void slow_callback(struct idr_rcu_head *head)
{
	(void)head;
	pause_a_while();
	__atomic_store_n(&slow_done, 1, __ATOMIC_SEQ_CST);
}

static void *barrier_then_look(void *arg)
{
	(void)arg;
	idr_rcu_barrier();
	__atomic_store_n(&slow_seen, __atomic_load_n(&slow_done, __ATOMIC_SEQ_CST),
			 __ATOMIC_SEQ_CST);
	return NULL;
}

TEST(idr_rcu_barrier_waits_for_the_callbacks_batched_with_it)
{
	pthread_t reader, waiter;

	slow_done = slow_seen = 0;
	hold_start(&reader);
	idr_call_rcu(&first_head, ignore_head); /* a batch, held back by the reader */
	idr_call_rcu(&slow_head, slow_callback);  /* waits for the next one */
	CHECK_EQ(pthread_create(&waiter, NULL, barrier_then_look, NULL), 0);
	pause_a_while(); /* the waiter's marker joins the slow callback */
	__atomic_store_n(&held_release, 1, __ATOMIC_SEQ_CST);
	CHECK_EQ(pthread_join(reader, NULL), 0);
	CHECK_EQ(pthread_join(waiter, NULL), 0);
	CHECK_EQ(slow_seen, 1);
}

/* A fork while liburcu's worker is inside a batch's callbacks:
 * idr_fork_prepare() waits for the worker to finish the batch and pause.
 * A child forked mid-batch would inherit a batch that no worker of its own
 * ever finishes, with libidr's queue still marked busy by it, and would
 * free nothing again: its barrier would never return (the alarm ends it). */
static struct idr_rcu_head mid_batch_head, child_head;
static int mid_batch_started, mid_batch_ran, child_ran;

static void mid_batch_callback(struct idr_rcu_head *head)
{
	struct timespec d = { 0, 300 * 1000 * 1000 };

	(void)head;
	__atomic_store_n(&mid_batch_started, 1, __ATOMIC_SEQ_CST);
	nanosleep(&d, NULL); /* the fork is asked for meanwhile */
	__atomic_add_fetch(&mid_batch_ran, 1, __ATOMIC_SEQ_CST);
}

static void child_callback(struct idr_rcu_head *head)
{
	(void)head;
	child_ran++;
}

static int child_of_a_mid_batch_fork(void)
{
	alarm(20);
	idr_fork_child();
	if (__atomic_load_n(&mid_batch_ran, __ATOMIC_SEQ_CST) != 1)
		return 1; /* forked before the batch was done */
	idr_call_rcu(&child_head, child_callback);
	idr_rcu_barrier();
	return child_ran == 1 ? 0 : 2;
}

TEST(a_fork_while_the_worker_runs_a_batch_waits_for_it)
{
	if (tu_fork_cannot_thread())
		return;
	idr_call_rcu(&mid_batch_head, mid_batch_callback);
	for (int i = 0; i < 400 && !__atomic_load_n(&mid_batch_started, __ATOMIC_SEQ_CST); i++)
		pause_a_while();
	CHECK_EQ(__atomic_load_n(&mid_batch_started, __ATOMIC_SEQ_CST), 1);
	idr_fork_prepare();
	int status = fork_and_wait(child_of_a_mid_batch_fork);
	idr_rcu_barrier();
	CHECK_EQ(mid_batch_ran, 1);
	CHECK_EQ(status, 0);
}

/* A fork while another thread waits in idr_synchronize_rcu():
 * idr_fork_prepare() takes liburcu-bp's grace-period and registry locks
 * (urcu_bp_before_fork()), so the fork waits for that grace period to end
 * (the reader holding it back leaves on its own after 300 ms), and the
 * child finds liburcu's state at rest and runs grace periods of its own
 * (its alarm ends it if not). */
static int syncing;

static void *synchronize_once(void *arg)
{
	(void)arg;
	__atomic_store_n(&syncing, 1, __ATOMIC_SEQ_CST);
	idr_synchronize_rcu();
	return NULL;
}

static int child_of_a_fork_amid_a_grace_period(void)
{
	alarm(20);
	idr_fork_child();
	idr_synchronize_rcu();
	return 0;
}

TEST(a_fork_while_a_grace_period_runs_waits_for_it)
{
	pthread_t reader, syncer;

	if (tu_fork_cannot_thread())
		return;
	held_for_ms = 300;
	hold_start(&reader);
	held_for_ms = 0;
	syncing = 0;
	CHECK_EQ(pthread_create(&syncer, NULL, synchronize_once, NULL), 0);
	while (!__atomic_load_n(&syncing, __ATOMIC_SEQ_CST))
		sched_yield();
	pause_a_while(); /* inside, waiting for the reader */
	idr_fork_prepare();
	int left_first = __atomic_load_n(&held_left, __ATOMIC_SEQ_CST);
	int status = fork_and_wait(child_of_a_fork_amid_a_grace_period);
	CHECK_EQ(pthread_join(syncer, NULL), 0);
	CHECK_EQ(pthread_join(reader, NULL), 0);
	CHECK_EQ(left_first, 1); /* the fork waited for the grace period */
	CHECK_EQ(status, 0);
}
