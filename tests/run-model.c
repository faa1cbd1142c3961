/* SPDX-License-Identifier: MIT */
/*
 * A randomized sequence of mixed operations over the whole ID space, each
 * result checked against a reference model; the full contents are compared
 * every few thousand steps.
 */
#include "model.h"
#include "testutil.h"

/* Everything visible through the API equals the model. */
static void check_contents(const struct idr *idr, const struct model *m)
{
	struct model_walk w = { m, 0, 0 };

	CHECK_EQ(idr_for_each(idr, model_visit, &w), 0);
	CHECK_EQ(w.bad, 0);
	while (w.i < m->n && (!m->e[w.i].ptr || m->e[w.i].id > INT_MAX))
		w.i++;
	CHECK_EQ(w.i, m->n);
	/* The same through idr_get_next(), as idr_for_each_entry() walks. */
	size_t k = 0;
	void *p;
	int id;
	idr_for_each_entry(idr, p, id) {
		k = model_live_from(m, k);
		CHECK(k < m->n && m->e[k].id == (uint64_t)id && m->e[k].ptr == p);
		k++;
	}
	while (k < m->n && (!m->e[k].ptr || m->e[k].id > INT_MAX))
		k++;
	CHECK_EQ(k, m->n);
	/* And through idr_get_next_ul(), IDs above INT_MAX included. */
	unsigned long uid, tmp;
	k = 0;
	idr_for_each_entry_ul(idr, p, tmp, uid) {
		k = model_live_from(m, k);
		CHECK(k < m->n && m->e[k].id == uid && m->e[k].ptr == p);
		k++;
	}
	CHECK_EQ(model_live_from(m, k), m->n);
	/* idr_find() inline, and the library's function (IDR_NO_INLINE_FIND). */
	for (size_t i = 0; i < m->n; i++) {
		CHECK(idr_find(idr, m->e[i].id) == m->e[i].ptr);
		CHECK(tu_library_find(idr, m->e[i].id) == m->e[i].ptr);
	}
	CHECK_EQ(idr_is_empty(idr), m->n == 0);
	CHECK_EQ(idr_memory_usage(idr) == 0, m->n == 0);
}

/* Without @wide, IDs stay near 0 and INT_MAX, so the tree stays small
 * enough to be checked whole after every step. */
static bool wide = true;

static uint64_t pick_start(uint64_t *rng)
{
	uint64_t r = tu_rand(rng) % 100;

	if (r < 70)
		return tu_rand(rng) % 3000;
	if (r < 90)
		return tu_rand(rng) % (wide ? 1u << 24 : 6000);
	return INT_MAX - tu_rand(rng) % 200;
}

static void *new_ptr(uint64_t *rng, uint64_t *serial)
{
	if (tu_rand(rng) % 20 == 0)
		return NULL; /* a reservation */
	return (void *)(uintptr_t)(++*serial * 16);
}

static void run_model(int base, long ops, uint64_t seed, long check_every)
{
	struct idr idr;
	struct model m = { 0 };
	uint64_t rng = seed, serial = 0;
	int resume = 0; /* where the next walking idr_get_next() starts */
	unsigned long resume_ul = 0; /* and idr_get_next_ul() */

	idr_init_base(&idr, base);
	for (long step = 0; step < ops; step++) {
		uint64_t r = tu_rand(&rng) % 100;
		bool crowded = m.n > 4000;

		if (r < (crowded ? 25 : 45)) {
			uint64_t start = pick_start(&rng);
			int end = tu_rand(&rng) % 3 ? 0 :
				  (int)(start + 1 + tu_rand(&rng) % 3000 > INT_MAX ?
					0 : start + 1 + tu_rand(&rng) % 3000);
			uint64_t max = end > 0 ? (uint64_t)end - 1 : INT_MAX;
			uint64_t want = model_lowest_free(&m, start < (uint64_t)base ? (uint64_t)base : start, max);
			void *p = new_ptr(&rng, &serial);
			int got = idr_alloc(&idr, p, (int)start, end, IDR_GFP_KERNEL);
			if (want == UINT64_MAX) {
				CHECK_EQ(got, -ENOSPC);
			} else {
				CHECK_EQ(got, want);
				model_insert(&m, want, p);
			}
		} else if (r < 48) {
			uint32_t id = UINT32_MAX - (uint32_t)(tu_rand(&rng) % 100);
			uint64_t want = model_lowest_free(&m, id, UINT32_MAX);
			void *p = new_ptr(&rng, &serial);
			uint32_t in = id;
			int err = idr_alloc_u32(&idr, p, &in, UINT32_MAX, IDR_GFP_KERNEL);
			if (want == UINT64_MAX) {
				CHECK_EQ(err, -ENOSPC);
				CHECK_EQ(in, id);
			} else {
				CHECK_EQ(err, 0);
				CHECK_EQ(in, want);
				model_insert(&m, want, p);
			}
		} else if (r < 80) {
			uint64_t id = m.n && tu_rand(&rng) % 4 ?
				      m.e[tu_rand(&rng) % m.n].id : pick_start(&rng);
			struct model_entry *e = model_get(&m, id);
			void *got = idr_remove(&idr, id);
			CHECK(got == (e ? e->ptr : NULL));
			if (e)
				model_delete(&m, id);
		} else if (r < 88) {
			uint64_t id = m.n && tu_rand(&rng) % 4 ?
				      m.e[tu_rand(&rng) % m.n].id : pick_start(&rng);
			struct model_entry *e = model_get(&m, id);
			void *p = new_ptr(&rng, &serial);
			void *got = idr_replace(&idr, p, id);
			if (e) {
				CHECK(got == e->ptr);
				e->ptr = p;
			} else {
				CHECK(got == IDR_ERR_PTR(-ENOENT));
			}
		} else if (r < 96) {
			uint64_t id = m.n && tu_rand(&rng) % 2 ?
				      m.e[tu_rand(&rng) % m.n].id : pick_start(&rng);
			struct model_entry *e = model_get(&m, id);
			CHECK(idr_find(&idr, id) == (e ? e->ptr : NULL));
			CHECK(tu_library_find(&idr, id) == (e ? e->ptr : NULL));
		} else if (r < 98) {
			/* idr_get_next_ul(), the same way, over every ID. */
			unsigned long id = tu_rand(&rng) % 2 ? resume_ul :
					   tu_rand(&rng) % 2 ? pick_start(&rng) :
					   UINT32_MAX - tu_rand(&rng) % 300;
			unsigned long want_id = id;
			size_t i = model_live_from(&m, model_lower(&m, id));
			void *got = idr_get_next_ul(&idr, &id);
			if (i < m.n) {
				CHECK(got == m.e[i].ptr);
				CHECK_EQ(id, m.e[i].id);
				resume_ul = id + 1;
			} else {
				CHECK(got == NULL);
				CHECK_EQ(id, want_id);
				resume_ul = 0;
			}
		} else {
			/* Half the time from just past the last entry found: a
			 * walk, with the changes of the steps between its calls. */
			int id = tu_rand(&rng) % 2 ? resume : (int)pick_start(&rng);
			int want_id = id;
			size_t i = model_live_from(&m, model_lower(&m, (uint64_t)id));
			void *got = idr_get_next(&idr, &id);
			if (i < m.n && m.e[i].id <= INT_MAX) {
				CHECK(got == m.e[i].ptr);
				CHECK_EQ(id, m.e[i].id);
				resume = id < INT_MAX ? id + 1 : 0;
			} else {
				CHECK(got == NULL);
				CHECK_EQ(id, want_id);
				resume = 0;
			}
		}
		if (step % check_every == 0)
			CHECK_EQ(idr_check(&idr), 0);
		if (step % 20000 == 0) {
			check_contents(&idr, &m);
			if (tu_failed())
				break;
		}
	}
	check_contents(&idr, &m);
	idr_destroy(&idr);
	model_free(&m);
}

TEST(million_mixed_operations_match_model)
{
	run_model(0, tu_scale(1000000), 0x9e3779b97f4a7c15ULL, 1000);
}

TEST(model_with_base_one)
{
	run_model(1, tu_scale(200000), 12345, 1000);
}

TEST(model_with_large_base)
{
	run_model(1 << 20, tu_scale(100000), 777, 1000);
}

TEST(model_structure_checked_after_every_step)
{
	wide = false;
	run_model(0, tu_scale(200000), 4242, 1);
	wide = true;
}
