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
#include <urcu-bp.h>
#include <urcu/call-rcu.h>

#include "testutil.h"

#define SPACE 1000000

static int anchor;
#define P_OBJ ((void *)&anchor)

struct obj {
	unsigned long id;
	unsigned long magic;
	struct rcu_head rcu;
};

#define MAGIC 0x1d1d1d1dUL

static void free_obj(struct rcu_head *head)
{
	struct obj *o = caa_container_of(head, struct obj, rcu);

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
		call_rcu(&o->rcu, free_obj);
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

/* ---- sparse leaves: lanes reused under lockless readers ---- */

#define LEAVES 512
#define OFFS 7 /* offsets 1..7: leaves go singleton, compact, full, back */

static struct obj fixed_objs[LEAVES * 64];
static struct idr sparse_idr;
static int sparse_stop;

static void *sparse_reader(void *arg)
{
	long *bad = arg;
	uint64_t rng = (uint64_t)(uintptr_t)arg | 1;

	while (!__atomic_load_n(&sparse_stop, __ATOMIC_ACQUIRE)) {
		unsigned long id = (tu_rand(&rng) % LEAVES) * 64 + 1 + tu_rand(&rng) % OFFS;
		idr_rcu_read_lock();
		const struct obj *o = idr_find(&sparse_idr, id);
		if (o && o->id != id)
			++*bad; /* another ID's object: a lane read torn */
		idr_rcu_read_unlock();
	}
	return NULL;
}

TEST(sparse_lanes_never_show_another_ids_object)
{
	pthread_t r[2];
	long bad[2] = { 0, 0 };
	uint64_t rng = 17;

	for (unsigned long i = 0; i < LEAVES * 64; i++)
		fixed_objs[i].id = i;
	idr_init(&sparse_idr);
	/* ID 0 keeps every leaf below one root without being in the way. */
	CHECK_EQ(idr_alloc(&sparse_idr, &fixed_objs[0], 0, 0, IDR_GFP_KERNEL), 0);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&r[i], NULL, sparse_reader, &bad[i]) == 0);
	for (long step = 0; step < tu_scale(2000000); step++) {
		unsigned long id = (tu_rand(&rng) % LEAVES) * 64 + 1 + tu_rand(&rng) % OFFS;
		if (!idr_remove(&sparse_idr, id))
			idr_alloc(&sparse_idr, &fixed_objs[id], (int)id, (int)id + 1,
				  IDR_GFP_KERNEL);
	}
	__atomic_store_n(&sparse_stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	CHECK_EQ(bad[0] + bad[1], 0);
	CHECK_EQ(idr_check(&sparse_idr), 0);
	idr_destroy(&sparse_idr);
}

/* ---- the lookup directory grown, replaced and dropped under readers ---- */

#define DIR_SPACE (64 * 1024)

static struct idr dir_idr;
static int dir_stop;
static struct obj dir_objs[DIR_SPACE];

static void *dir_reader(void *arg)
{
	long *bad = arg;
	uint64_t rng = (uint64_t)(uintptr_t)arg | 1;

	while (!__atomic_load_n(&dir_stop, __ATOMIC_ACQUIRE)) {
		idr_rcu_read_lock();
		for (int i = 0; i < 16; i++) {
			unsigned long id = tu_rand(&rng) % DIR_SPACE;
			const struct obj *o = idr_find(&dir_idr, id);
			if (o && o != &dir_objs[id])
				++*bad;
		}
		idr_rcu_read_unlock();
	}
	return NULL;
}

TEST(directory_changes_never_show_another_ids_object)
{
	pthread_t r[2];
	long bad[2] = { 0, 0 };
	uint64_t rng = 5;
	bool had_dir = false, lost_dir = false;

	for (unsigned long i = 0; i < DIR_SPACE; i++)
		dir_objs[i].id = i;
	idr_init(&dir_idr);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&r[i], NULL, dir_reader, &bad[i]) == 0);
	for (int round = 0; round < tu_scale(12); round++) {
		/* Dense: the directory is built and grows as leaves come. */
		for (long i = 0; i < DIR_SPACE; i++)
			if (!idr_find(&dir_idr, (unsigned long)i))
				CHECK_EQ(idr_alloc(&dir_idr, &dir_objs[i], (int)i, (int)i + 1,
						   IDR_GFP_KERNEL), i);
		had_dir |= dir_idr.idr_dir != NULL;
		/* Then nearly empty, through the sparse forms: it goes. */
		for (long i = 0; i < DIR_SPACE; i++)
			if (tu_rand(&rng) % 100)
				idr_remove(&dir_idr, (unsigned long)i);
		lost_dir |= dir_idr.idr_dir == NULL;
		CHECK_EQ(idr_check(&dir_idr), 0);
	}
	__atomic_store_n(&dir_stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	CHECK(had_dir && lost_dir);
	CHECK_EQ(bad[0] + bad[1], 0);
	idr_destroy(&dir_idr);
	idr_rcu_barrier();
}
