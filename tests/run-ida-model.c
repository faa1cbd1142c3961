/* SPDX-License-Identifier: MIT */
/* The ida against a plain bitmap over a window of the ID space, with ranges
 * touching 0, chunk edges and INT_MAX. */
#include <stdlib.h>

#include "testutil.h"

#define WINDOW (1u << 18)
static const unsigned windows[] = { 0, 1u << 24, INT_MAX - WINDOW + 1 };

static uint64_t ref[3][WINDOW / 64];

static bool ref_test(unsigned w, unsigned off)
{
	return ref[w][off / 64] >> (off % 64) & 1;
}

static void ref_flip(unsigned w, unsigned off)
{
	ref[w][off / 64] ^= (uint64_t)1 << (off % 64);
}

static long ref_lowest(unsigned w, unsigned lo, unsigned hi)
{
	for (unsigned off = lo; off <= hi; off++)
		if (!ref_test(w, off))
			return off;
	return -1;
}

TEST(ida_matches_bitmap_model)
{
	struct ida ida;
	uint64_t rng = 2024;
	long ops = tu_scale(1000000), live = 0;

	ida_init(&ida);
	for (long step = 0; step < ops; step++) {
		unsigned w = (unsigned)(tu_rand(&rng) % 3);
		unsigned base = windows[w];
		unsigned r = (unsigned)(tu_rand(&rng) % 100);
		if (r < (live > 60000 ? 30 : 55)) {
			unsigned lo = (unsigned)(tu_rand(&rng) % WINDOW);
			unsigned hi = tu_rand(&rng) % 4 ? WINDOW - 1 :
				      lo + (unsigned)(tu_rand(&rng) % 2048);
			if (hi >= WINDOW)
				hi = WINDOW - 1;
			if (tu_rand(&rng) % 8 == 0)
				lo = lo & ~1023u; /* chunk edge */
			long want = ref_lowest(w, lo, hi);
			int got = ida_alloc_range(&ida, base + lo, base + hi, IDR_GFP_KERNEL);
			if (want < 0) {
				CHECK_EQ(got, -ENOSPC);
			} else {
				CHECK_EQ(got, base + (unsigned)want);
				ref_flip(w, (unsigned)want);
				live++;
			}
		} else {
			unsigned off = (unsigned)(tu_rand(&rng) % WINDOW);
			bool had = ref_test(w, off);
			int diags = tu_diag_count();
			ida_free(&ida, base + off);
			CHECK_EQ(tu_diag_count(), diags + !had); /* misuse reported */
			if (had) {
				ref_flip(w, off);
				live--;
			}
		}
		if (step % 1000 == 0)
			CHECK_EQ(ida_check(&ida), 0);
		if (step % 100000 == 0) {
			for (unsigned off = 0; off < WINDOW; off += 97)
				CHECK_EQ(ida_exists(&ida, base + off), ref_test(w, off));
		}
	}
	CHECK_EQ(ida_is_empty(&ida), live == 0);
	CHECK_EQ(ida_alloc_range(&ida, 5, 4, IDR_GFP_KERNEL), -ENOSPC);
	CHECK_EQ(ida_alloc_min(&ida, (unsigned)INT_MAX + 1, IDR_GFP_KERNEL), -ENOSPC);
	ida_free(&ida, UINT32_MAX); /* out of range: reported, harmless */
	ida_destroy(&ida);
	CHECK(ida_is_empty(&ida));
	CHECK_EQ(ida_memory_usage(&ida), 0);
}

/* A range reaching past INT_MAX stops at INT_MAX, the largest ID an int
 * return can carry. */
TEST(ida_ranges_past_int_max_end_at_int_max)
{
	DEFINE_IDA(ida);

	CHECK_EQ(ida_alloc_range(&ida, INT_MAX - 1, UINT_MAX, IDR_GFP_KERNEL), INT_MAX - 1);
	CHECK_EQ(ida_alloc_range(&ida, INT_MAX - 1, UINT_MAX, IDR_GFP_KERNEL), INT_MAX);
	CHECK_EQ(ida_alloc_range(&ida, INT_MAX - 1, UINT_MAX, IDR_GFP_KERNEL), -ENOSPC);
	CHECK_EQ(ida_alloc_range(&ida, (unsigned)INT_MAX + 1, UINT_MAX, IDR_GFP_KERNEL),
		 -ENOSPC);
	CHECK_EQ(ida_alloc_max(&ida, UINT_MAX, IDR_GFP_KERNEL), 0);
	ida_free(&ida, INT_MAX);
	CHECK_EQ(ida_alloc_min(&ida, INT_MAX, IDR_GFP_KERNEL), INT_MAX);
	CHECK_EQ(ida_check(&ida), 0);
	ida_destroy(&ida);
}

TEST(ida_dense_cost_is_about_one_bit)
{
	struct ida ida;
	long n = 1 << 20; /* not scaled: the bound holds for large counts */

	ida_init(&ida);
	CHECK_EQ(ida_memory_usage(&ida), 0);
	for (long i = 0; i < n; i++)
		if (ida_alloc(&ida, IDR_GFP_KERNEL) != i)
			CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), i);
	CHECK((double)ida_memory_usage(&ida) / (double)n <= 0.15);
	CHECK_EQ(ida_alloc_max(&ida, (unsigned)n - 1, IDR_GFP_KERNEL), -ENOSPC);
	for (long i = 0; i < n; i++)
		ida_free(&ida, (unsigned)i);
	CHECK(ida_is_empty(&ida));
	CHECK_EQ(ida_memory_usage(&ida), 0);
	CHECK_EQ(tu_diag_count(), 0);
}

/* The hint names the chunk of the last allocation; freeing that chunk's
 * last ID frees the chunk, and the hint must go with it, or the next
 * allocation would claim a bit in freed memory (ASan and valgrind catch
 * that; the results below catch the claim going astray). */
TEST(freeing_the_hint_chunk_drops_the_hint)
{
	struct ida ida;
	size_t one_chunk;

	ida_init(&ida);
	for (int i = 0; i < 1024; i++) /* chunk 0 fills: the hint lets it go */
		CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), i);
	one_chunk = ida_memory_usage(&ida);
	CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), 1024); /* chunk 1, the hint */
	CHECK(ida_memory_usage(&ida) > one_chunk);
	ida_free(&ida, 1024); /* chunk 1 empties and is freed */
	CHECK_EQ(ida_memory_usage(&ida), one_chunk);
	CHECK_EQ(ida_check(&ida), 0);
	CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), 1024);
	CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), 1025);
	CHECK(!ida_exists(&ida, 1026));
	CHECK_EQ(ida_check(&ida), 0);
	ida_destroy(&ida);
	CHECK_EQ(ida_memory_usage(&ida), 0);
	CHECK_EQ(tu_diag_count(), 0);
}
