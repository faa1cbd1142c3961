/* SPDX-License-Identifier: MIT */
/*
 * The lookup directory (src/dir.c): a dense idr gets one, a sparse one does
 * not, and whatever the tree goes through the directory shows exactly the
 * tree's leaves (idr_check() compares every entry) and lookups through it
 * give exactly what the reference expects.  The tests read the directory
 * itself (src/internal.h) to see which kind an idr has and what its entries
 * say, and two of them change an entry for a moment to show that lookups
 * believe it, so the directory is known to be the path they took.
 */
#include <stdlib.h>
#include <string.h>

#include "../src/internal.h"
#include "testutil.h"

#define N 100000

static char objs[N];

static bool has_dir(const struct idr *idr)
{
	return __atomic_load_n(&idr->idr_dir, __ATOMIC_ACQUIRE) != NULL;
}

/* Every ID base + i, i in [0, limit), maps to objs[i] if present[i], else
 * to NULL, and the IDs just below and above the range map to NULL. */
static bool lookups_match(const struct idr *idr, const bool *present, long limit,
			  int base)
{
	for (long i = 0; i < limit; i++) {
		void *want = present[i] ? &objs[i] : NULL;
		if (idr_find(idr, (unsigned long)(i + base)) != want)
			return false;
	}
	return idr_find(idr, (unsigned long)(limit + base)) == NULL &&
	       (base == 0 || idr_find(idr, (unsigned long)base - 1) == NULL);
}

/* IDs 0..N-1, objs[i] under i. */
static void fill(struct idr *idr)
{
	idr_init(idr);
	for (long i = 0; i < N; i++)
		if (idr_alloc(idr, &objs[i], 0, 0, IDR_GFP_KERNEL) != i)
			tu_fail(__FILE__, __LINE__, "fill");
}

TEST(dense_idr_gets_a_directory_that_matches_the_tree)
{
	static bool present[N + 1];
	struct idr idr;

	idr_init_base(&idr, 1);
	for (long i = 0; i < N; i++) {
		CHECK_EQ(idr_alloc(&idr, &objs[i], 0, 0, IDR_GFP_KERNEL), i + 1);
		present[i] = true;
	}
	CHECK(has_dir(&idr));
	CHECK_EQ(idr_check(&idr), 0);
	/* Every leaf is in the directory's window: no lookup walks. */
	const struct leafdir *d = dir_load(&idr);
	for (size_t k = 0; k < (N + 63) / 64; k++)
		CHECK(dir_names_leaf(d->leaf[k]));
	CHECK(lookups_match(&idr, present, N, 1));
	/* IDs far beyond what the directory covers go down the tree. */
	CHECK_EQ(idr_alloc(&idr, &objs[7], 1 << 30, 0, IDR_GFP_KERNEL), 1 << 30);
	CHECK(idr_find(&idr, 1 << 30) == &objs[7]);
	CHECK(idr_find(&idr, (1 << 30) + 1) == NULL);
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
	CHECK(!has_dir(&idr));
	CHECK_EQ(idr_memory_usage(&idr), 0);
	CHECK_EQ(tu_settled_live(), 0);
}

/* Small tables are where most idrs live: one of 1,000 dense IDs (16 leaves)
 * has a directory of 16 entries, within the 1/32 of its tree's memory the
 * size rule allows, and its lookups go through it. */
TEST(a_thousand_dense_ids_get_a_directory)
{
	static bool present[1000];
	struct idr idr;

	idr_init(&idr);
	for (long i = 0; i < 1000; i++) {
		CHECK_EQ(idr_alloc(&idr, &objs[i], 0, 0, IDR_GFP_KERNEL), i);
		present[i] = true;
	}
	CHECK(has_dir(&idr));
	const struct leafdir *d = dir_load(&idr);
	CHECK_EQ(d->cap, 16);
	CHECK(dir_bytes(d->cap) * 32 <= 17 * sizeof(struct idr_node));
	CHECK_EQ(idr_memory_usage(&idr), 17 * sizeof(struct idr_node) + dir_bytes(16));
	for (size_t k = 0; k < 16; k++)
		CHECK(dir_names_leaf(d->leaf[k]));
	CHECK(lookups_match(&idr, present, 1000, 0));
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

TEST(directory_follows_sparse_forms_and_goes_when_sparse)
{
	static bool present[N];
	struct idr idr;
	uint64_t rng = 99;

	fill(&idr);
	for (long i = 0; i < N; i++)
		present[i] = true;
	/* Thin leaves out through every sparse form: full, compact,
	 * singleton, gone; check the directory at each stage. */
	for (int round = 0; round < 8; round++) {
		for (long i = 0; i < N; i++)
			if (present[i] && tu_rand(&rng) % 2) {
				CHECK(idr_remove(&idr, (unsigned long)i) == &objs[i]);
				present[i] = false;
			}
		CHECK_EQ(idr_check(&idr), 0);
		CHECK(lookups_match(&idr, present, N, 0));
	}
	/* 1/256 of the IDs are left: the directory would cost more than an
	 * eighth of the tree. */
	CHECK(!has_dir(&idr));
	/* Refilling makes the idr dense again, and the directory returns. */
	for (long i = 0; i < N; i++)
		if (!present[i]) {
			CHECK_EQ(idr_alloc(&idr, &objs[i], 0, 0, IDR_GFP_KERNEL), i);
			present[i] = true;
		}
	CHECK(has_dir(&idr));
	CHECK_EQ(idr_check(&idr), 0);
	CHECK(lookups_match(&idr, present, N, 0));
	/* Replacing into sparse forms keeps the directory in step too. */
	for (long i = 0; i < N; i++)
		if (i % 64 > 2) {
			idr_remove(&idr, (unsigned long)i);
			present[i] = false;
		}
	for (long i = 0; i < N; i += 64)
		CHECK(idr_replace(&idr, &objs[i + 1], (unsigned long)i) == &objs[i]);
	CHECK_EQ(idr_check(&idr), 0);
	for (long i = 0; i < N; i += 64)
		CHECK(idr_find(&idr, (unsigned long)i) == &objs[i + 1]);
	idr_destroy(&idr);
	CHECK_EQ(tu_settled_live(), 0);
}

TEST(directory_goes_when_the_tree_empties_or_shrinks)
{
	struct idr idr;

	fill(&idr);
	CHECK(has_dir(&idr));
	/* Down to IDs 0..63: one leaf, height 1, no place for a directory. */
	for (long i = N - 1; i >= 64; i--)
		CHECK(idr_remove(&idr, (unsigned long)i) == &objs[i]);
	CHECK(!has_dir(&idr));
	CHECK_EQ(idr_check(&idr), 0);
	for (long i = 0; i < 64; i++)
		CHECK(idr_find(&idr, (unsigned long)i) == &objs[i]);
	for (long i = 0; i < 64; i++)
		idr_remove(&idr, (unsigned long)i);
	CHECK(idr_is_empty(&idr));
	CHECK_EQ(idr_memory_usage(&idr), 0);
	CHECK_EQ(tu_settled_live(), 0);
}

TEST(memory_usage_counts_the_directory)
{
	struct idr idr;

	fill(&idr);
	idr_preload_drain();
	/* Every block the idr holds is a node, a compact leaf or the
	 * directory, and idr_memory_usage() counts each. */
	long nodes = (long)idr.idr_nodes + (long)idr.idr_sparse;
	CHECK_EQ(tu_settled_live(), nodes + 1);
	size_t dir = idr_memory_usage(&idr) - idr.idr_nodes * kind_bytes(KIND_PLAIN);
	/* A word per leaf, with under 50% slack. */
	CHECK(dir > (size_t)N / 64 * sizeof(uintptr_t));
	CHECK(dir < (size_t)N / 64 * sizeof(uintptr_t) * 3 / 2);
	idr_destroy(&idr);
}

/* The seed workflow only ever allocates NOWAIT under the lock, which may
 * not call the allocator: the directory comes from what idr_preload() set
 * aside after an allocation went without one. */
TEST(nowait_allocations_get_a_directory_through_preload)
{
	static bool present[N];
	struct idr idr;
	long calls_under_lock = 0;

	idr_init(&idr);
	for (long i = 0; i < N; i++) {
		idr_preload(IDR_GFP_KERNEL);
		idr_lock(&idr);
		long before = tu_thread_calls();
		CHECK_EQ(idr_alloc(&idr, &objs[i], 0, 0, IDR_GFP_NOWAIT), i);
		calls_under_lock += tu_thread_calls() - before;
		idr_unlock(&idr);
		idr_preload_end();
		present[i] = true;
	}
	CHECK_EQ(calls_under_lock, 0);
	CHECK(has_dir(&idr));
	CHECK_EQ(idr_check(&idr), 0);
	CHECK(lookups_match(&idr, present, N, 0));
	idr_destroy(&idr);
	idr_preload_drain();
	CHECK_EQ(tu_settled_live(), 0);
}

/* The directory is keyed by ID: with a base past the first leaf, its
 * entries below the base's leaf say "no leaf" and the rest show the tree
 * (idr_check() compares every one), through removals and re-allocation. */
TEST(a_directory_under_a_high_base_is_keyed_by_id)
{
	static bool present[N];
	const int base = 1000; /* its leaf is the 16th: IDs 960..1023 */
	struct idr idr;

	idr_init_base(&idr, base);
	for (long i = 0; i < N; i++) {
		CHECK_EQ(idr_alloc(&idr, &objs[i], 0, 0, IDR_GFP_KERNEL), base + i);
		present[i] = true;
	}
	CHECK(has_dir(&idr));
	CHECK_EQ(idr_check(&idr), 0);
	const struct leafdir *d = dir_load(&idr);
	for (size_t k = 0; k < (size_t)base / 64; k++)
		CHECK_EQ(d->leaf[k], DIR_NONE);
	for (size_t k = (size_t)base / 64; k <= (size_t)(base + N - 1) / 64; k++)
		CHECK(dir_names_leaf(d->leaf[k]));
	CHECK(lookups_match(&idr, present, N, base));
	for (long i = 0; i < N; i += 3) {
		CHECK(idr_remove(&idr, (unsigned long)(base + i)) == &objs[i]);
		present[i] = false;
	}
	CHECK_EQ(idr_check(&idr), 0);
	CHECK(lookups_match(&idr, present, N, base));
	CHECK_EQ(idr_alloc(&idr, &objs[0], 0, 0, IDR_GFP_KERNEL), base);
	CHECK_EQ(idr_alloc(&idr, &objs[3], 0, 0, IDR_GFP_KERNEL), base + 3);
	present[0] = present[3] = true;
	CHECK_EQ(idr_check(&idr), 0);
	CHECK(lookups_match(&idr, present, N, base));
	idr_destroy(&idr);
	CHECK_EQ(tu_settled_live(), 0);
}

/* Every leaf of IDs [@lo, @hi) has a directory entry that names it. */
static bool span_entries_are_leaves(const struct leafdir *d, unsigned long lo,
				    unsigned long hi)
{
	for (uint64_t k = lo >> 6; k <= (hi - 1) >> 6; k++)
		if (k - d->first >= d->cap || !dir_names_leaf(d->leaf[k - d->first]))
			return false;
	return true;
}

/* IDs far above 0, from a base or from each allocation's start: a keyed
 * directory would be mostly "no leaf" (1/32 of the tree buys none), so
 * they get a span directory from their lowest leaf, and idr_find() goes
 * through it out of line.  It shows the tree (idr_check()) and gives what
 * the reference expects through removals and re-allocation. */
TEST(ids_far_above_zero_get_a_span_directory)
{
	static bool present[N];
	static const struct {
		int base;
		int start;
	} ways[] = { { 1 << 24, 0 }, { 0, 1 << 24 }, { 1 << 30, 0 }, { 5, (1 << 28) + 5 } };

	for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
		int lowest = ways[w].start > ways[w].base ? ways[w].start : ways[w].base;
		unsigned long from = (unsigned long)lowest;
		struct idr idr;

		idr_init_base(&idr, ways[w].base);
		for (long i = 0; i < N; i++) {
			CHECK_EQ(idr_alloc(&idr, &objs[i], ways[w].start, 0, IDR_GFP_KERNEL),
				 (long)from + i);
			present[i] = true;
		}
		const struct leafdir *d = dir_load(&idr);
		CHECK(d != NULL);
		if (!d)
			return;
		CHECK(d->first > 0 && d->first <= from >> 6);
		CHECK_EQ(d->keyed, 0);
		CHECK(span_entries_are_leaves(d, from, from + N));
		/* Under 1/32 of the tree, as any directory */
		CHECK(dir_bytes(d->cap) * 32 <= idr_memory_usage(&idr));
		CHECK_EQ(idr_check(&idr), 0);
		CHECK(lookups_match(&idr, present, N, lowest));
		CHECK(idr_find(&idr, 0) == NULL);
		for (long i = 1; i < N; i += 3) {
			CHECK(idr_remove(&idr, from + (unsigned long)i) == &objs[i]);
			present[i] = false;
		}
		CHECK_EQ(idr_check(&idr), 0);
		CHECK(lookups_match(&idr, present, N, lowest));
		CHECK_EQ(idr_alloc(&idr, &objs[1], ways[w].start, 0, IDR_GFP_KERNEL), (long)from + 1);
		present[1] = true;
		/* A leaf left with two IDs turns compact: its entry says so. */
		for (long i = 200; i < 264; i++)
			if (present[i] && i != 220 && i != 230) {
				CHECK(idr_remove(&idr, from + (unsigned long)i) == &objs[i]);
				present[i] = false;
			}
		CHECK_EQ(idr_check(&idr), 0);
		CHECK(lookups_match(&idr, present, N, lowest));
		/* Lookups go through it: an entry made to say "no leaf" is
		 * believed. */
		d = dir_load(&idr);
		uintptr_t *entry = (uintptr_t *)&d->leaf[(from >> 6) - d->first];
		uintptr_t saved = *entry;
		*entry = DIR_NONE;
		CHECK(idr_find(&idr, from) == NULL);
		*entry = saved;
		CHECK(idr_find(&idr, from) == &objs[0]);
		idr_destroy(&idr);
	}
	CHECK_EQ(tu_settled_live(), 0);
}

/* Leaves allocated downwards, far above 0: the span grows down with room
 * to spare, so it covers every leaf and is replaced a few times, not once
 * per leaf. */
TEST(a_span_directory_grows_down_in_steps)
{
	enum { TOP = 1 << 24, LEAVES = 1500 };
	struct idr idr;
	const struct leafdir *last = NULL;
	int replaced = 0;

	idr_init(&idr);
	for (long l = 0; l < LEAVES; l++) {
		int start = TOP - 64 * (int)l;
		for (int i = 0; i < 64; i++)
			CHECK_EQ(idr_alloc(&idr, &objs[i], start, start + 64, IDR_GFP_KERNEL), start + i);
		const struct leafdir *d = dir_load(&idr);
		if (d != last)
			replaced++;
		last = d;
	}
	CHECK(last != NULL && last->first > 0 && last->keyed == 0);
	CHECK(span_entries_are_leaves(last, TOP - 64 * (LEAVES - 1), TOP + 64));
	CHECK(replaced < 40);
	CHECK_EQ(idr_check(&idr), 0);
	CHECK(idr_find(&idr, TOP - 64 * (LEAVES - 1)) == &objs[0]);
	CHECK(idr_find(&idr, TOP + 63) == &objs[63]);
	idr_destroy(&idr);
	CHECK_EQ(tu_settled_live(), 0);
}

/* A handle idr from @base with @count IDs, objs[i] under base + i and its
 * handle in @h[i]; its directory. */
static const struct leafdir *handle_fill(struct idr *idr, int base, long count,
					 idr_handle_t *h)
{
	idr_init_flags(idr, base, IDR_F_HANDLES);
	for (long i = 0; i < count; i++)
		if (idr_alloc_handle(idr, &objs[i], 0, 0, IDR_GFP_KERNEL, &h[i]) != base + i)
			tu_fail(__FILE__, __LINE__, "handle_fill");
	return dir_load(idr);
}

/* Handle lookups take a span directory too; stale handles stay stale. */
TEST(handles_far_above_zero_resolve_through_a_span_directory)
{
	enum { BASE = 1 << 24, COUNT = 20000 };
	static idr_handle_t h[COUNT];
	struct idr idr;
	const struct leafdir *d = handle_fill(&idr, BASE, COUNT, h);

	CHECK(d != NULL && d->first == BASE >> 6 && d->keyed == 0);
	if (!d)
		return;
	for (long i = 0; i < COUNT; i++)
		CHECK(idr_find_handle(&idr, h[i]) == &objs[i]);
	for (long i = 0; i < COUNT; i += 5)
		CHECK(idr_remove_handle(&idr, h[i]) == &objs[i]);
	for (long i = 0; i < COUNT; i += 5) {
		idr_handle_t old = h[i];
		CHECK_EQ(idr_alloc_handle(&idr, &objs[i], 0, 0, IDR_GFP_KERNEL, &h[i]), BASE + i);
		CHECK(idr_find_handle(&idr, old) == NULL);
	}
	for (long i = 0; i < COUNT; i++)
		CHECK(idr_find_handle(&idr, h[i]) == &objs[i]);
	CHECK_EQ(idr_check(&idr), 0);
	/* Through the directory: an entry made to say "no leaf" is believed. */
	d = dir_load(&idr);
	uintptr_t *entry = (uintptr_t *)&d->leaf[(BASE >> 6) - d->first];
	uintptr_t saved = *entry;
	*entry = DIR_NONE;
	CHECK(idr_find_handle(&idr, h[0]) == NULL);
	*entry = saved;
	CHECK(idr_find_handle(&idr, h[0]) == &objs[0]);
	idr_destroy(&idr);
	CHECK_EQ(tu_settled_live(), 0);
}

/* Handle lookups ask a keyed directory before the tree, and the slots
 * of the base's leaf below the base still have no handle. */
TEST(handles_below_the_base_stay_none_beside_a_keyed_directory)
{
	enum { BASE = 5, COUNT = 20000 };
	static idr_handle_t h[COUNT];
	struct idr idr;
	const struct leafdir *d = handle_fill(&idr, BASE, COUNT, h);

	CHECK(d != NULL && d->first == 0 && d->keyed > COUNT / 64);
	if (!d)
		return;
	for (unsigned id = 0; id < BASE; id++) {
		CHECK_EQ(idr_handle_of(&idr, id), 0);
		CHECK(idr_find_handle(&idr, idr_handle_make(id, 0)) == NULL);
		CHECK(idr_find_handle(&idr, idr_handle_make(id, idr_handle_gen(h[0]))) == NULL);
	}
	for (long i = 0; i < COUNT; i++)
		CHECK(idr_find_handle(&idr, h[i]) == &objs[i]);
	/* The directory answers first: an entry made to say "no leaf" is
	 * believed. */
	uintptr_t *entry = (uintptr_t *)&d->leaf[1];
	uintptr_t saved = *entry;
	*entry = DIR_NONE;
	CHECK(idr_find_handle(&idr, h[64 - BASE]) == NULL);
	CHECK_EQ(idr_handle_of(&idr, 64), 0);
	*entry = saved;
	CHECK(idr_find_handle(&idr, h[64 - BASE]) == &objs[64 - BASE]);
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
	CHECK_EQ(tu_settled_live(), 0);
}

/* A span directory reaches down to a leaf below its first one when that
 * stays affordable, and gives way to a keyed one once the IDs from 0
 * outweigh the range below. */
TEST(a_span_directory_reaches_down_then_gives_way_to_a_keyed_one)
{
	enum { HIGH = 1 << 20, UPPER = 50000, LOWER = 10000, LOW = 300000 };
	static bool present[UPPER + LOWER];
	struct idr idr;

	idr_init(&idr);
	for (long i = 0; i < UPPER; i++) {
		CHECK_EQ(idr_alloc(&idr, &objs[LOWER + i], HIGH, 0, IDR_GFP_KERNEL), HIGH + i);
		present[LOWER + i] = true;
	}
	const struct leafdir *d = dir_load(&idr);
	CHECK(d != NULL && d->first == HIGH >> 6 && d->keyed == 0);
	CHECK_EQ(idr_check(&idr), 0);
	/* Just below: the span grows down to cover it. */
	for (long i = 0; i < LOWER; i++) {
		CHECK_EQ(idr_alloc(&idr, &objs[i], HIGH - 2 * LOWER, 0, IDR_GFP_KERNEL),
			 HIGH - 2 * LOWER + i);
		present[i] = true;
	}
	d = dir_load(&idr);
	CHECK(d != NULL && d->first > 0 && d->first <= (HIGH - 2 * LOWER) >> 6);
	CHECK(span_entries_are_leaves(d, HIGH - 2 * LOWER, HIGH - LOWER));
	CHECK(span_entries_are_leaves(d, HIGH, HIGH + UPPER));
	CHECK_EQ(idr_check(&idr), 0);
	CHECK(lookups_match(&idr, present, LOWER, HIGH - 2 * LOWER));
	/* Dense from 0: once the tree affords a keyed directory, it is one. */
	for (long i = 0; i < LOW; i++)
		CHECK_EQ(idr_alloc(&idr, &objs[i % N], 0, 0, IDR_GFP_KERNEL), i);
	d = dir_load(&idr);
	CHECK(d != NULL && d->first == 0 && d->keyed == d->cap);
	CHECK(d->cap > (HIGH + UPPER - 1) >> 6);
	CHECK_EQ(idr_check(&idr), 0);
	for (long i = 0; i < LOW; i += 7)
		CHECK(idr_find(&idr, (unsigned long)i) == &objs[i % N]);
	for (long i = 0; i < LOWER; i++)
		CHECK(idr_find(&idr, (unsigned long)(HIGH - 2 * LOWER + i)) == &objs[i]);
	for (long i = 0; i < UPPER; i++)
		CHECK(idr_find(&idr, (unsigned long)(HIGH + i)) == &objs[LOWER + i]);
	idr_destroy(&idr);
	CHECK_EQ(tu_settled_live(), 0);
}

/* How many of the full leaves of IDs [@lo, @hi) the directory names, out
 * of how many there are (in *@full). */
static long leaves_named(const struct idr *idr, unsigned long lo, unsigned long hi,
			 long *full)
{
	const struct leafdir *d = dir_load(idr);
	long named = 0;

	*full = 0;
	for (uint64_t k = lo >> 6; k <= (hi - 1) >> 6; k++) {
		const void *word = tree_leaf_word(idr, k);
		if (!word || is_sparse(word))
			continue;
		++*full;
		named += d && k - d->first < d->cap && dir_names_leaf(d->leaf[k - d->first]);
	}
	return named;
}

/* A few IDs near 0 beside many far above: no directory over all of them
 * is affordable, so the bulk gets a window of its own, and the IDs that
 * come later near 0, in full leaves or one to a leaf, walk the tree rather
 * than take it away. */
TEST(a_few_ids_near_zero_leave_the_bulk_far_above_a_window)
{
	enum { FAR = 1 << 24, NEAR_FULL = 40, NEAR_ONES = 400 };
	static bool present[N];
	struct idr idr;
	long full;

	idr_init(&idr);
	for (long i = 0; i < 3; i++)
		CHECK_EQ(idr_alloc(&idr, &objs[i], 0, 0, IDR_GFP_KERNEL), i);
	for (long i = 0; i < N; i++) {
		CHECK_EQ(idr_alloc(&idr, &objs[i], FAR, 0, IDR_GFP_KERNEL), FAR + i);
		present[i] = true;
	}
	const struct leafdir *d = dir_load(&idr);
	CHECK(d != NULL && d->first > 0 && d->keyed == 0);
	CHECK(dir_bytes(d ? d->cap : 0) * 32 <= idr_memory_usage(&idr));
	CHECK_EQ(leaves_named(&idr, FAR, FAR + N, &full), full);
	CHECK_EQ(full, (N + 63) / 64);
	CHECK_EQ(idr_check(&idr), 0);
	CHECK(lookups_match(&idr, present, N, FAR));
	for (long i = 3; i < 64 * NEAR_FULL; i++)
		CHECK_EQ(idr_alloc(&idr, &objs[i], 0, FAR, IDR_GFP_KERNEL), i);
	for (long k = NEAR_FULL + 1; k <= NEAR_FULL + NEAR_ONES; k++)
		CHECK_EQ(idr_alloc(&idr, &objs[k], 64 * (int)k, FAR, IDR_GFP_KERNEL), 64 * k);
	CHECK_EQ(leaves_named(&idr, FAR, FAR + N, &full), full);
	CHECK_EQ(idr_check(&idr), 0);
	CHECK(lookups_match(&idr, present, N, FAR));
	for (long i = 0; i < 64 * NEAR_FULL; i++)
		CHECK(idr_find(&idr, (unsigned long)i) == &objs[i]);
	for (long k = NEAR_FULL + 1; k <= NEAR_FULL + NEAR_ONES; k++)
		CHECK(idr_find(&idr, 64 * (unsigned long)k) == &objs[k]);
	idr_destroy(&idr);
	CHECK_EQ(tu_settled_live(), 0);
}

/* A span over IDs far above 0 stays when one ID near 0 comes after it: a
 * keyed directory that covers the new ID is affordable (16 entries), but
 * leaves out every leaf the span names, so the present one is extended or
 * kept, never traded for it. */
TEST(one_id_near_zero_leaves_a_span_in_place)
{
	enum { FAR = 1 << 24 };
	struct idr idr;
	long full;

	idr_init(&idr);
	for (long i = 0; i < N; i++)
		CHECK_EQ(idr_alloc(&idr, &objs[i], FAR, 0, IDR_GFP_KERNEL), FAR + i);
	CHECK_EQ(leaves_named(&idr, FAR, FAR + N, &full), full);
	for (long i = 0; i < 64; i++) /* a full leaf at 0 */
		CHECK_EQ(idr_alloc(&idr, &objs[i], 0, FAR, IDR_GFP_KERNEL), i);
	const struct leafdir *d = dir_load(&idr);
	CHECK(d != NULL && d->first > 0);
	CHECK_EQ(leaves_named(&idr, FAR, FAR + N, &full), full);
	CHECK_EQ(full, (N + 63) / 64);
	CHECK_EQ(idr_check(&idr), 0);
	CHECK(idr_find(&idr, 0) == &objs[0]);
	CHECK(idr_find(&idr, FAR + N - 1) == &objs[N - 1]);
	idr_destroy(&idr);
	CHECK_EQ(tu_settled_live(), 0);
}

/* Cyclic IDs beside a long-lived one: the live IDs climb through the ID
 * space and the window climbs with them, moving a few times per its own
 * size, and names nearly all their leaves wherever they are. */
TEST(a_window_follows_cyclic_ids_beside_a_long_lived_one)
{
	enum { LIVE = 20000, ROUNDS = 400000 };
	static unsigned long q[LIVE];
	struct idr idr;
	const struct leafdir *last = NULL;
	long moves = 0, full, worst = 100;

	idr_init(&idr);
	CHECK_EQ(idr_alloc(&idr, &objs[0], 0, 1, IDR_GFP_KERNEL), 0);
	for (long i = 0; i < LIVE; i++)
		q[i] = (unsigned long)idr_alloc_cyclic(&idr, &objs[(i + 1) % N], 1, 0, IDR_GFP_KERNEL);
	for (long r = 0; r < ROUNDS; r++) {
		long h = r % LIVE;
		CHECK(idr_remove(&idr, q[h]) == &objs[q[h] % N]);
		long id = idr_alloc_cyclic(&idr, &objs[(LIVE + r + 1) % N], 1, 0, IDR_GFP_KERNEL);
		CHECK_EQ(id, LIVE + r + 1);
		q[h] = (unsigned long)id;
		const struct leafdir *d = dir_load(&idr);
		moves += d != last;
		last = d;
		if (r % 5000 == 4999) { /* the oldest live ID is q[h + 1] */
			long named = leaves_named(&idr, q[(h + 1) % LIVE], (unsigned long)id + 1, &full);
			if (named * 100 / full < worst)
				worst = named * 100 / full;
		}
	}
	CHECK(worst >= 90);
	CHECK(moves < 60);
	CHECK(last != NULL && last->first > 0);
	CHECK_EQ(idr_check(&idr), 0);
	for (long i = 0; i < LIVE; i++)
		CHECK(idr_find(&idr, q[i]) == &objs[q[i] % N]);
	CHECK(idr_find(&idr, 0) == &objs[0]);
	CHECK(idr_find(&idr, q[0] - LIVE) == NULL);
	idr_destroy(&idr);
	CHECK_EQ(tu_settled_live(), 0);
}

/* New leaves far from the window move it only once they outnumber the
 * leaves it names four to one: until then the bulk keeps it. */
TEST(a_window_moves_to_far_leaves_once_they_outnumber_its_own)
{
	enum { A = 1 << 24, B = 1 << 28, A_LEAVES = 300, B_LEAVES = 2000 };
	struct idr idr;
	long full, moved_at = -1;

	idr_init(&idr);
	CHECK_EQ(idr_alloc(&idr, &objs[0], 0, 1, IDR_GFP_KERNEL), 0);
	for (long i = 0; i < 64 * A_LEAVES; i++)
		CHECK_EQ(idr_alloc(&idr, &objs[i + 1], A, 0, IDR_GFP_KERNEL), A + i);
	CHECK_EQ(leaves_named(&idr, A, A + 64 * A_LEAVES, &full), A_LEAVES);
	for (long l = 0; l < B_LEAVES; l++) {
		for (long i = 0; i < 64; i++)
			CHECK_EQ(idr_alloc(&idr, &objs[i + 1], B, 0, IDR_GFP_KERNEL), B + 64 * l + i);
		if (l == 4 * A_LEAVES - 1) /* the bulk still has it */
			CHECK_EQ(leaves_named(&idr, A, A + 64 * A_LEAVES, &full), A_LEAVES);
		if (moved_at < 0 && leaves_named(&idr, B + 64 * (unsigned long)l,
						 B + 64 * (unsigned long)l + 1, &full))
			moved_at = l + 1;
	}
	/* One miss per new leaf here (full from its first ID, by objs' odd
	 * addresses): the move comes after 4 * 300 of them, and a 64th
	 * of the window's size at most later. */
	CHECK(moved_at > 4 * A_LEAVES);
	CHECK(moved_at < 5 * A_LEAVES);
	CHECK_EQ(leaves_named(&idr, B, B + 64 * B_LEAVES, &full), full);
	CHECK_EQ(idr_check(&idr), 0);
	CHECK(idr_find(&idr, A) == &objs[1]);
	CHECK(idr_find(&idr, B + 64 * B_LEAVES - 1) == &objs[64]);
	idr_destroy(&idr);
	CHECK_EQ(tu_settled_live(), 0);
}

/* IDs allocated at random leave most leaves compact, so the first
 * directory may be built before any full leaf is in it.  Full leaves that
 * come later must still be named: a directory with no leaf to count from
 * takes its base from the first one (it once kept none, and named none of
 * thousands of full leaves). */
TEST(random_ids_get_their_full_leaves_named)
{
	enum { COUNT = 30000, BITS = 18 };
	static long aligned[1];
	struct idr idr;
	long full;

	idr_init(&idr);
	srand(7);
	for (long i = 0; i < COUNT; i++) {
		long start = (long)(((unsigned long)rand() << 8 ^ (unsigned long)rand()) &
				    ((1UL << BITS) - 1));
		CHECK(idr_alloc(&idr, aligned, (int)start, 0, IDR_GFP_KERNEL) >= start);
	}
	CHECK(has_dir(&idr));
	long named = leaves_named(&idr, 0, 1UL << BITS, &full);
	CHECK(full > 1000);
	CHECK_EQ(named, full);
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
	CHECK_EQ(tu_settled_live(), 0);
}

/* A leaf's entry is its address less 8 bytes for each ID below it, so
 * that entry + 8 * ID is the ID's slot, wherever the leaf is and however
 * high its IDs (the sum may wrap); the marks are odd, a leaf's entry never. */
TEST(directory_entries_locate_each_slot)
{
	static void *leaf[NODE_SLOTS] __attribute__((aligned(16)));
	static const uint64_t leaves[] = { 0, 1, 1000, (uint64_t)1 << 25,
					   ((uint64_t)1 << 26) - 1 };

	CHECK_EQ(dir_entry(NULL, 5), DIR_NONE);
	CHECK(!dir_names_leaf(DIR_NONE) && !dir_names_leaf(DIR_TREE));
	for (unsigned i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		uint64_t k = leaves[i];
		uintptr_t e = dir_entry(leaf, k);
		CHECK(dir_names_leaf(e));
		for (uint64_t off = 0; off < NODE_SLOTS; off += 21)
			CHECK((void **)(e + (uintptr_t)((k << NODE_BITS) + off) * sizeof(void *)) ==
			      &leaf[off]);
		CHECK_EQ(dir_entry((char *)leaf + TAG_SINGLE, k), DIR_TREE);
		CHECK_EQ(dir_entry((char *)leaf + TAG_COMPACT, k), DIR_TREE);
	}
}

struct seq {
	long got[N];
	long n;
	bool wrong_ptr;
};

static int record_id(int id, void *p, void *data)
{
	struct seq *s = data;

	s->wrong_ptr |= p != &objs[id - 5];
	s->got[s->n++] = id;
	return 0;
}

/* Iteration through the directory: idr_get_next() scans the leaf the
 * directory names, idr_for_each() walks the tree once, and both give
 * exactly the live IDs in order, from a base, with holes, up to the end. */
TEST(iteration_scans_the_leaves_the_directory_names)
{
	enum { BASE = 5, COUNT = 20000 };
	static struct seq s;
	static long want[COUNT];
	struct idr idr;
	long nwant = 0;

	idr_init_base(&idr, BASE);
	for (long i = 0; i < COUNT; i++)
		CHECK_EQ(idr_alloc(&idr, &objs[i], 0, 0, IDR_GFP_KERNEL), BASE + i);
	for (long i = 0; i < COUNT; i++) {
		if (i % 3 == 0 || (i >= 640 && i < 704))
			idr_remove(&idr, (unsigned long)(BASE + i)); /* and one whole leaf */
		else
			want[nwant++] = BASE + i;
	}
	const struct leafdir *d = dir_load(&idr);
	CHECK(d != NULL && d->keyed > COUNT / 64);
	if (!d)
		return;

	s.n = 0;
	CHECK_EQ(idr_for_each(&idr, record_id, &s), 0);
	CHECK_EQ(s.n, nwant);
	CHECK(!s.wrong_ptr);
	CHECK(memcmp(s.got, want, (size_t)nwant * sizeof(long)) == 0);

	void *p;
	int id;
	s.n = 0;
	s.wrong_ptr = false;
	idr_for_each_entry(&idr, p, id)
		record_id(id, p, &s);
	CHECK_EQ(s.n, nwant);
	CHECK(!s.wrong_ptr);
	CHECK(memcmp(s.got, want, (size_t)nwant * sizeof(long)) == 0);

	/* From every ID, and from past the last one. */
	long k = 0;
	for (long from = 0; from < BASE + COUNT + 70; from++) {
		while (k < nwant && want[k] < from)
			k++;
		id = (int)from;
		p = idr_get_next(&idr, &id);
		if (k < nwant)
			CHECK(p == &objs[want[k] - BASE] && id == want[k]);
		else
			CHECK(p == NULL && id == from);
	}

	/* The directory answers first: a leaf whose entry is made to say "no
	 * leaf" is skipped, and one that says "ask the tree" is found. */
	uintptr_t *entry = (uintptr_t *)&d->leaf[2]; /* IDs 128..191 */
	uintptr_t saved = *entry;
	*entry = DIR_NONE;
	id = 130;
	CHECK(idr_get_next(&idr, &id) == &objs[192 - BASE] && id == 192);
	*entry = DIR_TREE;
	id = 130;
	CHECK(idr_get_next(&idr, &id) == &objs[130 - BASE] && id == 130);
	*entry = saved;
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
	CHECK_EQ(tu_settled_live(), 0);
}

/* idr_replace() through the directory: a published ID returns its old
 * pointer, a reserved (NULL) one returns NULL, a free one -ENOENT and
 * keeps free, in a leaf the directory names. */
TEST(replace_through_the_directory_keeps_every_rule)
{
	struct idr idr;

	fill(&idr);
	const struct leafdir *d = dir_load(&idr);
	CHECK(d != NULL && d->keyed > N / 64);
	for (long i = 0; i < N; i += 7)
		CHECK(idr_replace(&idr, &objs[N - 1 - i], (unsigned long)i) == &objs[i]);
	for (long i = 3; i < N; i += 1000) {
		CHECK(idr_remove(&idr, (unsigned long)i) == &objs[i % 7 ? i : N - 1 - i]);
		CHECK(idr_replace(&idr, &objs[0], (unsigned long)i) == IDR_ERR_PTR(-ENOENT));
		CHECK(idr_find(&idr, (unsigned long)i) == NULL);
		CHECK_EQ(idr_alloc(&idr, NULL, (int)i, (int)i + 1, IDR_GFP_KERNEL), i);
		CHECK(idr_replace(&idr, &objs[i], (unsigned long)i) == NULL);
		CHECK(idr_find(&idr, (unsigned long)i) == &objs[i]);
	}
	CHECK(dir_load(&idr) == d); /* all of it through the same directory */
	for (long i = 0; i < N; i++)
		CHECK(idr_find(&idr, (unsigned long)i) ==
		      &objs[i % 7 == 0 && i % 1000 != 3 ? N - 1 - i : i]);
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
	CHECK_EQ(tu_settled_live(), 0);
}

/* Allocations from a given ID in a dense idr: the lowest free ID at or
 * above it, whether its leaf (which the directory names) has room or not,
 * and the free bits above a leaf that such a claim fills stay exact. */
TEST(allocation_from_a_given_id_takes_the_lowest_free_at_or_above_it)
{
	static bool present[N];
	struct idr idr;
	uint64_t rng = 99;

	fill(&idr);
	CHECK(dir_load(&idr) != NULL);
	for (long i = 0; i < N; i++)
		present[i] = true;
	for (long k = 0; k < N / 10; k++) {
		long i = (long)(tu_rand(&rng) % N);
		if (present[i]) {
			CHECK(idr_remove(&idr, (unsigned long)i) == &objs[i]);
			present[i] = false;
		}
	}
	for (long k = 0; k < N / 5; k++) {
		long from = (long)(tu_rand(&rng) % N), want = from;
		while (want < N && present[want])
			want++;
		long got = idr_alloc(&idr, &objs[want < N ? want : 0], (int)from,
				     k % 2 ? (int)from + 1 : 0, IDR_GFP_KERNEL);
		if (k % 2 && want != from)
			CHECK_EQ(got, -ENOSPC); /* only [from, from + 1) */
		else
			CHECK_EQ(got, want);
		if (got >= 0 && got < N)
			present[got] = true;
		else if (got == N)
			CHECK(idr_remove(&idr, N) == &objs[0]);
	}
	CHECK_EQ(idr_check(&idr), 0);
	/* Then from 0: every hole that is left, in order, and then N. */
	for (long i = 0; i < N; i++)
		if (!present[i])
			CHECK_EQ(idr_alloc(&idr, &objs[i], 0, 0, IDR_GFP_KERNEL), i);
	CHECK_EQ(idr_alloc(&idr, &objs[0], 0, 0, IDR_GFP_KERNEL), N);
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
	CHECK_EQ(tu_settled_live(), 0);
}

/* idr_get_next() from past the last entry of a leaf the directory names
 * (its tail removed, or reserved with NULL) finds the next leaf's first
 * entry, and from just before the tail, the tail's first entry. */
TEST(iteration_past_a_named_leafs_last_entry_goes_to_the_next_leaf)
{
	struct idr idr;
	int id;

	fill(&idr);
	for (long i = 5 * 64 + 32; i < 6 * 64; i++)
		CHECK(idr_remove(&idr, (unsigned long)i) == &objs[i]);
	for (long i = 7 * 64 + 60; i < 8 * 64; i++)
		CHECK(idr_replace(&idr, NULL, (unsigned long)i) == &objs[i]);
	const struct leafdir *d = dir_load(&idr);
	CHECK(d != NULL && dir_names_leaf(d->leaf[5]) && dir_names_leaf(d->leaf[7]));
	for (int from = 5 * 64 + 32; from < 6 * 64; from++) {
		id = from;
		CHECK(idr_get_next(&idr, &id) == &objs[6 * 64] && id == 6 * 64);
	}
	id = 5 * 64 + 31;
	CHECK(idr_get_next(&idr, &id) == &objs[5 * 64 + 31] && id == 5 * 64 + 31);
	for (int from = 7 * 64 + 60; from < 8 * 64; from++) {
		id = from;
		CHECK(idr_get_next(&idr, &id) == &objs[8 * 64] && id == 8 * 64);
	}
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
	CHECK_EQ(tu_settled_live(), 0);
}

/* One NOWAIT allocation under a lock: IDs come in order from 0. */
static bool nowait_alloc(struct idr *idr, long i)
{
	idr_preload(IDR_GFP_KERNEL);
	idr_lock(idr);
	bool ok = idr_alloc(idr, &objs[i], 0, 0, IDR_GFP_NOWAIT) == i;
	idr_unlock(idr);
	idr_preload_end();
	return ok;
}

/* When the allocator refuses idr_preload() the directory a NOWAIT
 * allocation asked for, the allocations go on without one and the wish
 * stays: the first preload that gets the memory stocks it, and the next
 * allocation that wants it installs it. */
static bool not_a_node(size_t size)
{
	return size != kind_bytes(KIND_PLAIN) && size != kind_bytes(KIND_COMPACT);
}

TEST(a_refused_directory_stays_wanted_until_a_preload_gets_it)
{
	struct idr idr;
	long i = 0;

	idr_init(&idr);
	tu_fail_if(not_a_node); /* no directory */
	for (; i < 3000; i++) {
		bool ok = nowait_alloc(&idr, i);
		CHECK(ok);
		CHECK(!has_dir(&idr));
	}
	tu_fail_if(NULL);
	for (long until = i + 64; i < until && !has_dir(&idr); i++)
		CHECK(nowait_alloc(&idr, i));
	CHECK(has_dir(&idr));
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
	idr_preload_drain();
	CHECK_EQ(tu_settled_live(), 0);
}

/* Outside a preload section, IDR_GFP_KERNEL grows the directory when it is
 * due.  The directory only speeds lookups up, so when the allocator refuses
 * it the allocation still succeeds, without it: every lookup walks the
 * tree, and the refused call leaked nothing.  Once the allocator gives
 * again, the next leaf that wants a directory gets one. */
static long refused;

static bool count_refusal(size_t size)
{
	bool refuse = not_a_node(size);

	refused += refuse;
	return refuse;
}

TEST(a_refused_directory_fails_no_blocking_allocation)
{
	struct idr idr;
	long i = 0;

	idr_init(&idr);
	refused = 0;
	tu_fail_if(count_refusal);
	for (; i < 3000 && !refused; i++)
		CHECK_EQ(idr_alloc(&idr, &objs[i], 0, 0, IDR_GFP_KERNEL), i);
	CHECK(refused == 1 && i % 64 == 1 && !has_dir(&idr));
	for (long j = i; i < j + 4 * 64; i++)
		CHECK_EQ(idr_alloc(&idr, &objs[i], 0, 0, IDR_GFP_KERNEL), i);
	tu_fail_if(NULL);
	CHECK(refused >= 4); /* asked again with each new leaf */
	CHECK(!has_dir(&idr));
	for (long j = 0; j < i; j++)
		CHECK(idr_find(&idr, (unsigned long)j) == &objs[j]);
	CHECK(idr_find(&idr, (unsigned long)i) == NULL);
	CHECK_EQ(idr_check(&idr), 0);
	for (long until = i + 64; i < until && !has_dir(&idr); i++)
		CHECK_EQ(idr_alloc(&idr, &objs[i], 0, 0, IDR_GFP_KERNEL), i);
	CHECK(has_dir(&idr));
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
	idr_preload_drain();
	CHECK_EQ(tu_settled_live(), 0);
}
