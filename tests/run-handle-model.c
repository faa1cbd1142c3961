/* SPDX-License-Identifier: MIT */
/*
 * 1,000,000 random handle operations against a reference that remembers
 * every handle ever issued: a current handle must resolve to its object, a
 * stale one must resolve to nothing and change nothing.  Leaves empty and
 * come back, and the tree empties and regrows, along the way.  Then lockless
 * readers race a writer and must never see an object through a handle that
 * is not the object's own.
 */
#include <pthread.h>
#include <stdlib.h>

#include "model.h"
#include "testutil.h"

struct ref {
	idr_handle_t *issued; /* every handle, in issue order */
	size_t n, cap;
	struct model m;       /* live IDs; ptr encodes the issue index */
};

static void *obj_for(size_t idx, unsigned version)
{
	return (void *)(uintptr_t)((idx + 1) << 4 | (version & 1) << 3);
}

static size_t idx_of(const void *p)
{
	return ((uintptr_t)p >> 4) - 1;
}

static bool is_current(const struct ref *r, size_t idx)
{
	struct model_entry *e = model_get(&r->m, idr_handle_id(r->issued[idx]));

	return e && idx_of(e->ptr) == idx;
}

static size_t pick_issued(const struct ref *r, uint64_t *rng)
{
	if (tu_rand(rng) % 2 && r->n > 100)
		return r->n - 1 - tu_rand(rng) % 100; /* recent: likely reused IDs */
	return tu_rand(rng) % r->n;
}

static int pick_start(uint64_t *rng)
{
	uint64_t k = tu_rand(rng) % 100;

	return k < 90 ? (int)(tu_rand(rng) % 4096) : k < 95 ? 1 << 20 : 1 << 26;
}

/* Returns the number of checks of a stale handle made. */
static long step(struct idr *idr, struct ref *r, uint64_t *rng, bool *bad)
{
	uint64_t k = tu_rand(rng) % 100;

	if (k < 40 || !r->n) {
		int start = pick_start(rng);
		uint64_t want = model_lowest_free(&r->m, (uint64_t)start, INT_MAX);
		idr_handle_t h = 0;
		void *p = obj_for(r->n, 0);
		int id = idr_alloc_handle(idr, p, start, 0, IDR_GFP_KERNEL, &h);
		/* The k-th allocation gets generation k: every handle is new. */
		*bad |= (uint64_t)id != want || idr_handle_id(h) != want ||
			idr_handle_gen(h) != r->n + 1;
		if (r->n == r->cap) {
			r->cap = r->cap ? 2 * r->cap : 4096;
			r->issued = realloc(r->issued, r->cap * sizeof(*r->issued));
		}
		r->issued[r->n++] = h;
		model_insert(&r->m, want, p);
		return 0;
	}
	size_t idx = pick_issued(r, rng);
	idr_handle_t h = r->issued[idx];
	uint32_t id = idr_handle_id(h);
	bool cur = is_current(r, idx);
	struct model_entry *e = model_get(&r->m, id);
	void *live = e ? e->ptr : NULL;

	if (k < 65) {
		void *got = idr_remove_handle(idr, h);
		*bad |= got != (cur ? live : NULL);
		if (cur)
			model_delete(&r->m, id);
	} else if (k < 90) {
		*bad |= idr_find_handle(idr, h) != (cur ? live : NULL);
	} else if (k < 95) {
		void *p = obj_for(idx, 1 + (unsigned)(tu_rand(rng) & 1));
		void *got = idr_replace_handle(idr, p, h);
		*bad |= got != (cur ? live : IDR_ERR_PTR(-ENOENT));
		if (cur)
			e->ptr = p;
	} else if (e) {
		*bad |= idr_remove(idr, id) != live; /* the plain API */
		model_delete(&r->m, id);
	}
	*bad |= idr_find(idr, id) != (model_get(&r->m, id) ? model_get(&r->m, id)->ptr : NULL);
	return !cur;
}

static void drain(struct idr *idr, struct ref *r)
{
	while (r->m.n) {
		uint64_t id = r->m.e[r->m.n - 1].id;
		idr_remove(idr, id);
		r->m.n--;
	}
}

TEST(million_handle_operations_no_stale_handle_resolves)
{
	struct idr idr;
	struct ref r = { 0 };
	uint64_t rng = 99;
	long ops = tu_scale(1000000), stale_checks = 0;
	bool bad = false;

	idr_init_flags(&idr, 0, IDR_F_HANDLES);
	for (long i = 1; i <= ops && !bad; i++) {
		stale_checks += step(&idr, &r, &rng, &bad);
		if (i % 100000 == 0) {
			drain(&idr, &r); /* the tree empties and regrows */
			CHECK(idr_is_empty(&idr));
		}
		if (i % 1000 == 0)
			CHECK_EQ(idr_check(&idr), 0);
	}
	CHECK(!bad);
	/* Every handle ever issued, at the end. */
	for (size_t i = 0; i < r.n; i++) {
		bool cur = is_current(&r, i);
		void *got = idr_find_handle(&idr, r.issued[i]);
		struct model_entry *e = model_get(&r.m, idr_handle_id(r.issued[i]));
		CHECK(got == (cur ? e->ptr : NULL));
	}
	printf("    %zu handles issued, %ld checks of a stale handle\n", r.n,
	       stale_checks);
	CHECK(stale_checks > ops / 10);
	idr_destroy(&idr);
	model_free(&r.m);
	free(r.issued);
}

/* ---- lockless readers against a writer ---- */

#define SPACE 256
#define OBJECTS 200000

struct obj {
	idr_handle_t handle; /* written before the object is published */
};

static struct obj pool[OBJECTS];
static idr_handle_t recent[SPACE]; /* handles readers try; some stale */
static struct idr shared;
static int done;

static void *reader(void *arg)
{
	long *bad = arg;
	uint64_t rng = (uint64_t)(uintptr_t)arg | 1;

	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		idr_handle_t h = __atomic_load_n(&recent[tu_rand(&rng) % SPACE],
						 __ATOMIC_RELAXED);
		idr_rcu_read_lock();
		struct obj *o = idr_find_handle(&shared, h);
		if (o && __atomic_load_n(&o->handle, __ATOMIC_RELAXED) != h)
			++*bad; /* another object seen through this handle */
		idr_rcu_read_unlock();
	}
	return NULL;
}

TEST(lockless_find_by_handle_races_remove_safely)
{
	pthread_t t[2];
	long bad[2] = { 0, 0 };
	uint64_t rng = 5;
	long n = tu_scale(OBJECTS);

	idr_init_flags(&shared, 0, IDR_F_HANDLES);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, reader, &bad[i]) == 0);
	/* Reserve, name the object, publish: readers never see it unnamed.
	 * Objects are never reused, so a mismatch can only be the idr's. */
	for (long i = 0; i < n; i++) {
		idr_handle_t h;
		int id = idr_alloc_handle(&shared, NULL, 0, SPACE, IDR_GFP_KERNEL, &h);
		if (id < 0) {
			uint32_t victim = (uint32_t)(tu_rand(&rng) % SPACE);
			idr_remove(&shared, victim);
			i--;
			continue;
		}
		__atomic_store_n(&pool[i].handle, h, __ATOMIC_RELAXED);
		idr_replace_handle(&shared, &pool[i], h);
		__atomic_store_n(&recent[tu_rand(&rng) % SPACE], h, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(bad[0] + bad[1], 0);
	idr_destroy(&shared);
}
