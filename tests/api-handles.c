/* SPDX-License-Identifier: MIT */
/* Generation-checked handles: a stale handle never resolves, whatever the
 * tree did since it was issued. */
#include "testutil.h"

static int objs[256];
#define P(i) ((void *)&objs[i])

static DEFINE_IDR(plain_static);
static struct idr handles_static = IDR_INIT_FLAGS(handles_static, 0, IDR_F_HANDLES);

static void init(struct idr *idr)
{
	idr_init_flags(idr, 0, IDR_F_HANDLES);
}

/* Allocate at the lowest free ID >= @start; returns its handle (0 on error). */
static idr_handle_t take(struct idr *idr, void *p, int start)
{
	idr_handle_t h = 0;

	return idr_alloc_handle(idr, p, start, 0, IDR_GFP_KERNEL, &h) >= 0 ? h : 0;
}

/* @h is rejected by every handle call and changes nothing. */
static bool rejected(struct idr *idr, idr_handle_t h)
{
	uint32_t id = idr_handle_id(h);
	void *before = idr_find(idr, id);

	return idr_find_handle(idr, h) == NULL &&
	       idr_remove_handle(idr, h) == NULL &&
	       idr_replace_handle(idr, P(99), h) == IDR_ERR_PTR(-ENOENT) &&
	       idr_find(idr, id) == before && idr_check(idr) == 0;
}

TEST(handle_layout_and_helpers)
{
	struct idr idr;

	CHECK_EQ(idr_handle_make(7, 3), ((uint64_t)3 << 32) | 7);
	CHECK_EQ(idr_handle_id(idr_handle_make(UINT32_MAX, 1)), UINT32_MAX);
	CHECK_EQ(idr_handle_gen(idr_handle_make(0, UINT32_MAX)), UINT32_MAX);
	init(&idr);
	idr_handle_t h = take(&idr, P(1), 0);
	CHECK(h != 0);
	CHECK_EQ(idr_handle_id(h), 0);
	CHECK(idr_handle_gen(h) != 0); /* 0 is never a valid handle */
	CHECK(idr_find_handle(&idr, h) == P(1));
	CHECK(idr_find(&idr, 0) == P(1)); /* the plain API sees the same entry */
	CHECK(idr_find_handle(&idr, 0) == NULL);
	CHECK_EQ(idr_handle_of(&idr, 0), h);
	CHECK_EQ(idr_handle_of(&idr, 1), 0);
	idr_destroy(&idr);
}

/* The allocation clock wraps past 0: generation 0 would make handle 0 of
 * ID 0, which means "none", so the tick after UINT32_MAX is 1. */
TEST(the_generation_skips_zero_when_the_clock_wraps)
{
	struct idr idr;

	init(&idr);
	idr.idr_clock = UINT32_MAX - 1; /* private: what 2^32 - 2 allocations leave */
	idr_handle_t a = take(&idr, P(1), 0), b = take(&idr, P(2), 0);
	CHECK_EQ(idr_handle_gen(a), UINT32_MAX);
	CHECK_EQ(idr_handle_gen(b), 1);
	CHECK_EQ(idr_handle_id(b), 1);
	CHECK(idr_find_handle(&idr, a) == P(1) && idr_find_handle(&idr, b) == P(2));
	CHECK(idr_remove_handle(&idr, a) == P(1));
	idr_handle_t c = take(&idr, P(3), 0);
	CHECK_EQ(idr_handle_gen(c), 2);
	CHECK(rejected(&idr, a));
	CHECK(idr_find_handle(&idr, c) == P(3));
	idr_destroy(&idr);
}

TEST(stale_after_remove_and_after_reallocation)
{
	struct idr idr;

	init(&idr);
	idr_handle_t a = take(&idr, P(1), 0), b = take(&idr, P(2), 0);
	CHECK_EQ(idr_handle_id(b), 1);
	CHECK(idr_remove_handle(&idr, a) == P(1));
	CHECK(rejected(&idr, a));
	idr_handle_t a2 = take(&idr, P(3), 0); /* lowest free: ID 0 again */
	CHECK_EQ(idr_handle_id(a2), 0);
	CHECK(a2 != a);
	CHECK(rejected(&idr, a)); /* and the new entry is untouched */
	CHECK(idr_find_handle(&idr, a2) == P(3));
	CHECK(idr_replace_handle(&idr, P(4), a2) == P(3));
	CHECK(idr_find_handle(&idr, a2) == P(4));
	CHECK(idr_find_handle(&idr, a2) == idr_find(&idr, 0));
	/* The plain remove makes the handle stale just the same. */
	CHECK(idr_remove(&idr, 1) == P(2));
	CHECK(rejected(&idr, b));
	idr_destroy(&idr);
}

TEST(stale_after_leaf_freed_and_rebuilt)
{
	struct idr idr;
	idr_handle_t old[64];

	init(&idr);
	for (int i = 0; i < 128; i++)
		take(&idr, P(i), 0);
	for (int i = 0; i < 64; i++)
		old[i] = idr_handle_of(&idr, 64 + (unsigned)i);
	size_t two_leaves = idr_memory_usage(&idr);
	for (int i = 0; i < 64; i++)
		CHECK(idr_remove_handle(&idr, old[i]) == P(64 + i));
	CHECK(idr_memory_usage(&idr) < two_leaves); /* the leaf is gone */
	for (int i = 0; i < 64; i++)
		CHECK_EQ(idr_handle_id(take(&idr, P(200), 0)), 64 + i);
	CHECK_EQ(idr_memory_usage(&idr), two_leaves); /* and rebuilt */
	for (int i = 0; i < 64; i++)
		CHECK(rejected(&idr, old[i]));
	idr_destroy(&idr);
}

TEST(stale_after_tree_shrank_and_regrew)
{
	struct idr idr;

	init(&idr);
	idr_handle_t low = take(&idr, P(1), 0), far = take(&idr, P(2), 1 << 20);
	CHECK_EQ(idr_handle_id(far), 1 << 20);
	CHECK(idr_remove_handle(&idr, far) == P(2)); /* the tree shrinks */
	CHECK(idr_remove_handle(&idr, low) == P(1)); /* to nothing */
	CHECK(idr_is_empty(&idr));
	CHECK_EQ(idr_memory_usage(&idr), 0);
	idr_handle_t low2 = take(&idr, P(3), 0), far2 = take(&idr, P(4), 1 << 20);
	CHECK_EQ(idr_handle_id(low2), 0);
	CHECK_EQ(idr_handle_id(far2), 1 << 20);
	CHECK(rejected(&idr, low));
	CHECK(rejected(&idr, far));
	CHECK(idr_find_handle(&idr, far2) == P(4));
	/* Destroy and reuse: nothing issued before resolves after. */
	idr_destroy(&idr);
	idr_handle_t low3 = take(&idr, P(5), 0);
	CHECK(rejected(&idr, low2));
	CHECK(idr_find_handle(&idr, low3) == P(5));
	idr_destroy(&idr);
}

/* An ID past what the tree spans has no handle, and a handle naming one is
 * rejected, even with the generation of the ID whose slot it would reach
 * if the walk ignored the span (the top level's index wrapping to 0):
 * heights 1 to 3, where the directory has no answer for such IDs. */
TEST(ids_past_the_trees_span_have_no_handles)
{
	struct idr idr;
	unsigned long span = 64;

	init(&idr);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(idr_handle_id(take(&idr, P(i), i)), i);
	for (int height = 1; height <= 3; height++, span *= 64) {
		unsigned long top_child = span / 64; /* IDs under one top slot */

		if (height > 1) /* one level more */
			CHECK_EQ(idr_handle_id(take(&idr, P(height), (int)top_child)), top_child);
		unsigned long under[] = { 0, 1, 2, 3, top_child };
		for (size_t k = 0; k < sizeof(under) / sizeof(under[0]); k++) {
			idr_handle_t live = idr_handle_of(&idr, under[k]);

			CHECK(live != 0);
			CHECK_EQ(idr_handle_of(&idr, span + under[k]), 0);
			CHECK(rejected(&idr, idr_handle_make((uint32_t)(span + under[k]),
							     idr_handle_gen(live))));
		}
	}
	idr_destroy(&idr);
}

TEST(plain_idrs_have_no_handles)
{
	struct idr idr;
	idr_handle_t h = 12345;

	idr_init(&idr);
	CHECK_EQ(idr_alloc_handle(&idr, P(1), 0, 0, IDR_GFP_KERNEL, &h), -EINVAL);
	CHECK_EQ(h, 12345); /* untouched on error */
	CHECK_EQ(idr_alloc(&idr, P(1), 0, 0, IDR_GFP_KERNEL), 0);
	CHECK(idr_find_handle(&idr, idr_handle_make(0, 1)) == NULL);
	CHECK(idr_remove_handle(&idr, idr_handle_make(0, 1)) == NULL);
	CHECK(idr_find(&idr, 0) == P(1));
	CHECK_EQ(idr_handle_of(&idr, 0), 0);
	CHECK(idr_is_empty(&plain_static));
	idr_destroy(&idr);
}

TEST(errors_match_idr_alloc)
{
	struct idr idr;
	idr_handle_t h = 77;

	init(&idr);
	CHECK_EQ(idr_alloc_handle(&idr, P(1), -1, 0, IDR_GFP_KERNEL, &h), -EINVAL);
	CHECK_EQ(idr_alloc_handle(&idr, P(1), 5, 5, IDR_GFP_KERNEL, &h), -ENOSPC);
	tu_fail_call(1);
	CHECK_EQ(idr_alloc_handle(&idr, P(1), 0, 0, IDR_GFP_KERNEL, &h), -ENOMEM);
	CHECK_EQ(h, 77);
	CHECK(idr_is_empty(&idr));
	CHECK_EQ(idr_alloc_handle(&idr, P(1), INT_MAX, 0, IDR_GFP_KERNEL, &h), INT_MAX);
	CHECK(idr_find_handle(&idr, h) == P(1));
	CHECK_EQ(idr_alloc_handle(&idr, P(1), INT_MAX, 0, IDR_GFP_KERNEL, &h), -ENOSPC);
	idr_destroy(&idr);
}

TEST(handle_nodes_cost_four_bytes_per_slot)
{
	struct idr plain, gen;

	idr_init(&plain);
	init(&gen);
	for (int i = 0; i < 64; i++) {
		CHECK_EQ(idr_alloc(&plain, P(i), 0, 0, IDR_GFP_KERNEL), i);
		CHECK(take(&gen, P(i), 0) != 0);
	}
	CHECK_EQ(idr_memory_usage(&gen) - idr_memory_usage(&plain),
		 64 * sizeof(uint32_t));
	idr_destroy(&plain);
	idr_destroy(&gen);
}

/* The seed pattern holds for handle idrs: preload, then every allocator
 * call fails, and the allocation still succeeds without calling it. */
TEST(preloaded_handle_alloc_cannot_fail)
{
	struct idr idr;
	idr_handle_t h = 0;

	init(&idr);
	for (int round = 0; round < 3; round++) {
		long calls;
		CHECK_EQ(tu_seed_alloc_handle(&idr, P(round), round << 26, &h, &calls),
			 round << 26);
		CHECK_EQ(calls, 0);
		CHECK(idr_find_handle(&idr, h) == P(round));
	}
	idr_destroy(&idr);
}

TEST(statically_initialized_handle_idr)
{
	idr_handle_t h = take(&handles_static, P(1), 0);

	CHECK(h != 0);
	CHECK(idr_find_handle(&handles_static, h) == P(1));
	CHECK(idr_remove_handle(&handles_static, h) == P(1));
	CHECK(rejected(&handles_static, h));
	idr_destroy(&handles_static);
}

TEST(reserve_then_publish_by_handle)
{
	struct idr idr;
	idr_handle_t h = 0;

	init(&idr);
	CHECK_EQ(idr_alloc_handle(&idr, NULL, 0, 0, IDR_GFP_KERNEL, &h), 0);
	CHECK(idr_find_handle(&idr, h) == NULL);
	CHECK(idr_replace_handle(&idr, P(1), h) == NULL);
	CHECK(idr_find_handle(&idr, h) == P(1));
	/* A forged generation for a live ID is rejected too. */
	idr_handle_t forged = idr_handle_make(0, idr_handle_gen(h) + 1);
	CHECK(idr_find_handle(&idr, forged) == NULL);
	CHECK(idr_remove_handle(&idr, forged) == NULL);
	CHECK(idr_find_handle(&idr, h) == P(1));
	idr_destroy(&idr);
}
