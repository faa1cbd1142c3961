/* SPDX-License-Identifier: MIT */
/*
 * The lookup directory (src/dir.c): a dense idr gets one, a sparse one does
 * not, and whatever the tree goes through the directory shows exactly the
 * tree's leaves (idr_check() compares every entry) and lookups through it
 * give exactly what the reference expects.  The struct's private idr_dir is
 * read only to see whether there is a directory at all.
 */
#include <stdlib.h>

#include "../src/internal.h"
#include "testutil.h"

#define N 100000

static char objs[N];

static bool has_dir(const struct idr *idr)
{
	return __atomic_load_n(&idr->idr_dir, __ATOMIC_ACQUIRE) != NULL;
}

/* Every ID in [0, limit) maps to objs[id] if present[id], else NULL. */
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
		CHECK(d->leaf[k] != DIR_NONE && d->leaf[k] != DIR_TREE);
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
		CHECK(d->leaf[k] != DIR_NONE && d->leaf[k] != DIR_TREE);
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
	size_t dir = idr_memory_usage(&idr) - idr.idr_nodes * 536;
	CHECK(dir > (size_t)N / 64 * sizeof(uint32_t));
	CHECK(dir < (size_t)N / 64 * sizeof(uint32_t) * 3);
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
	for (size_t k = 0; k < base / 64; k++)
		CHECK_EQ(d->leaf[k], DIR_NONE);
	for (size_t k = base / 64; k <= (base + N - 1) / 64; k++)
		CHECK(d->leaf[k] != DIR_NONE && d->leaf[k] != DIR_TREE);
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

/* 32-bit entries: 8-byte words from base; anything else asks the tree. */
TEST(directory_entries_encode_exactly_the_window)
{
	struct leafdir d = { .cap = 0, .base = (uintptr_t)1 << 40 };
	char *b = (char *)d.base;
	const uintptr_t unit = DIR_UNIT;

	CHECK_EQ(dir_entry(&d, NULL), DIR_NONE);
	CHECK_EQ(dir_entry(&d, b + unit), 1);
	CHECK_EQ(dir_entry(&d, b + 12345 * unit), 12345);
	CHECK_EQ(dir_entry(&d, b + (uintptr_t)(DIR_TREE - 1) * unit), DIR_TREE - 1);
	CHECK_EQ(dir_entry(&d, b + (uintptr_t)DIR_TREE * unit), DIR_TREE);
	CHECK_EQ(dir_entry(&d, b + ((uintptr_t)1 << 40)), DIR_TREE);
	CHECK_EQ(dir_entry(&d, b), 0);
	CHECK_EQ(dir_entry(&d, b + (uintptr_t)DIR_NONE * unit), DIR_TREE); /* would read as none */
	CHECK_EQ(dir_entry(&d, b - unit), DIR_TREE); /* below the base */
	CHECK_EQ(dir_entry(&d, b + unit + 4), DIR_TREE); /* not a unit */
	CHECK_EQ(dir_entry(&d, b + 64 * unit + TAG_SINGLE), DIR_TREE);
	CHECK_EQ(dir_entry(&d, b + 64 * unit + TAG_COMPACT), DIR_TREE);
}
