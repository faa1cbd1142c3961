/* SPDX-License-Identifier: MIT */
/* The ida against a plain bitmap over a window of the ID space, with ranges
 * touching 0, chunk edges and INT_MAX. */
#include <stdlib.h>
#include <string.h>

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

/* The lowest offset in [@lo, @hi] of window @w that is allocated (@used)
 * or free (not @used), or -1; whole words of the other kind are skipped. */
static long ref_first(unsigned w, unsigned lo, unsigned hi, bool used)
{
	uint64_t other = used ? 0 : UINT64_MAX;

	for (unsigned off = lo; off <= hi;) {
		if (off % 64 == 0 && ref[w][off / 64] == other && hi - off >= 63) {
			off += 64;
			continue;
		}
		if (ref_test(w, off) == used)
			return off;
		off++;
	}
	return -1;
}

/* ida_find_first_range() from offset @lo of window @w: to @hi in that
 * window, or with @to_end to UINT_MAX, across the windows above. */
static long ref_find(unsigned w, unsigned lo, unsigned hi, bool to_end)
{
	long off = ref_first(w, lo, to_end ? WINDOW - 1 : hi, true);

	if (off >= 0)
		return windows[w] + (unsigned)off;
	for (unsigned v = w + 1; to_end && v < 3; v++)
		if ((off = ref_first(v, 0, WINDOW - 1, true)) >= 0)
			return windows[v] + (unsigned)off;
	return -ENOENT;
}

TEST(ida_matches_bitmap_model)
{
	struct ida ida;
	uint64_t rng = 2024;
	long ops = tu_scale(1000000), live = 0;

	memset(ref, 0, sizeof(ref));
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
			long want = ref_first(w, lo, hi, false);
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
		if (step % 64 == 0) {
			unsigned lo = (unsigned)(tu_rand(&rng) % WINDOW);
			bool to_end = tu_rand(&rng) % 4 == 0;
			unsigned hi = lo + (unsigned)(tu_rand(&rng) % 4096);
			if (tu_rand(&rng) % 8 == 0)
				lo = lo & ~1023u; /* chunk edge */
			if (hi >= WINDOW)
				hi = WINDOW - 1;
			CHECK_EQ(ida_find_first_range(&ida, base + lo, to_end ? UINT_MAX : base + hi),
				 ref_find(w, lo, hi, to_end));
		}
		if (step % 1000 == 0)
			CHECK_EQ(ida_check(&ida), 0);
		if (step % 100000 == 0) {
			for (unsigned off = 0; off < WINDOW; off += 97)
				CHECK_EQ(ida_exists(&ida, base + off), ref_test(w, off));
		}
	}
	CHECK_EQ(ida_is_empty(&ida), live == 0);
	CHECK_EQ(ida_find_first(&ida), ref_find(0, 0, 0, true));
	CHECK_EQ(ida_alloc_range(&ida, 5, 4, IDR_GFP_KERNEL), -ENOSPC);
	CHECK_EQ(ida_alloc_min(&ida, (unsigned)INT_MAX + 1, IDR_GFP_KERNEL), -ENOSPC);
	ida_free(&ida, UINT32_MAX); /* out of range: reported, harmless */
	ida_destroy(&ida);
	CHECK(ida_is_empty(&ida));
	CHECK_EQ(ida_memory_usage(&ida), 0);
}

/* The common use, which the model above, with its ranges from anywhere in
 * three windows, seldom reaches: ida_alloc() from 0 (and from small
 * minimums) beside frees among the IDs in use, so that frees land in the
 * allocation hint's chunk, below its low mark, and in the chunks below it.
 * Each allocation must return the lowest free ID. */
TEST(ida_alloc_from_0_beside_frees_returns_the_lowest_free_id)
{
	struct ida ida;
	uint64_t rng = 28;
	long ops = tu_scale(400000), live = 0;
	unsigned top = 0; /* one past the highest ID ever allocated */

	memset(ref, 0, sizeof(ref)); /* window 0, from 0, is the model */
	ida_init(&ida);
	for (long step = 0; step < ops; step++) {
		unsigned r = (unsigned)(tu_rand(&rng) % 100);
		/* Around 6,000 IDs in use, a few chunks' worth. */
		if (!live || r < (live > 6000 ? 40 : 55)) {
			unsigned min = r % 8 ? 0 : (unsigned)(tu_rand(&rng) % (top + 1));
			long want = ref_first(0, min, WINDOW - 1, false);
			int got = min ? ida_alloc_min(&ida, min, IDR_GFP_KERNEL) :
					ida_alloc(&ida, IDR_GFP_KERNEL);
			CHECK(want >= 0);
			CHECK_EQ(got, want);
			ref_flip(0, (unsigned)want);
			live++;
			if ((unsigned)want >= top)
				top = (unsigned)want + 1;
		} else {
			unsigned id = (unsigned)(tu_rand(&rng) % top);
			if (ref_test(0, id)) {
				ida_free(&ida, id);
				ref_flip(0, id);
				live--;
			}
		}
		if (step % 4096 == 0)
			CHECK_EQ(ida_check(&ida), 0);
	}
	for (unsigned id = 0; id < top; id++)
		CHECK_EQ(ida_exists(&ida, id), ref_test(0, id));
	ida_destroy(&ida);
}

/* A range reaching past INT_MAX stops at INT_MAX, the largest ID an int
 * return can carry. */
/* A chunk filled from its second word to its last, its first word empty,
 * is not full: once the allocation hint is elsewhere, a walk from 0 must
 * come back to it.  (Every word but the first decides nothing.) */
TEST(a_chunk_full_but_for_its_first_word_still_has_room)
{
	struct ida ida;

	ida_init(&ida);
	for (int id = 64; id < 1024; id++) /* chunk 0 (1024 IDs), but its first word */
		CHECK_EQ(ida_alloc_min(&ida, 64, IDR_GFP_KERNEL), id);
	/* The hint moves to another chunk, from a search that did not start
	 * at 0, so it vouches for nothing below it. */
	CHECK_EQ(ida_alloc_min(&ida, 5000, IDR_GFP_KERNEL), 5000);
	CHECK_EQ(ida_check(&ida), 0);
	for (int id = 0; id < 64; id++)
		CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), id);
	CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), 1024);
	CHECK_EQ(ida_check(&ida), 0);
	ida_destroy(&ida);
}

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

/* ida_find_first_range()'s errors, and the lowest allocated ID where the
 * range starts past every ID of its first chunk, ends inside a chunk, or
 * reaches INT_MAX; it never allocates or changes anything. */
TEST(find_first_errors_and_chunk_edges)
{
	DEFINE_IDA(ida);
	static const unsigned ids[] = { 3, 1023, 1024, 3000, 70000, INT_MAX };

	CHECK_EQ(ida_find_first(&ida), -ENOENT);
	CHECK_EQ(ida_find_first_range(&ida, 0, UINT_MAX), -ENOENT);
	for (unsigned i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		CHECK_EQ(ida_alloc_min(&ida, ids[i], IDR_GFP_KERNEL), (int)ids[i]);
	long calls = tu_calls();
	size_t bytes = ida_memory_usage(&ida);

	CHECK_EQ(ida_find_first(&ida), 3);
	CHECK_EQ(ida_find_first_range(&ida, 3, 3), 3);
	CHECK_EQ(ida_find_first_range(&ida, 4, UINT_MAX), 1023);  /* same chunk */
	CHECK_EQ(ida_find_first_range(&ida, 1024, UINT_MAX), 1024); /* next chunk */
	CHECK_EQ(ida_find_first_range(&ida, 1025, UINT_MAX), 3000); /* past the first's IDs */
	/* A search that moves on to a later chunk starts it at bit 0, not at
	 * the bit @min has in its own chunk: 3000 is bit 952 of its chunk, and
	 * 70000 bit 368 of its chunk, past chunks without a bitmap. */
	CHECK_EQ(ida_find_first_range(&ida, 2024, UINT_MAX), 3000);
	CHECK_EQ(ida_find_first_range(&ida, 4072, UINT_MAX), 70000);
	CHECK_EQ(ida_find_first_range(&ida, 1025, 2999), -ENOENT);  /* ends inside a chunk */
	CHECK_EQ(ida_find_first_range(&ida, 3001, 69999), -ENOENT); /* chunks without IDs */
	CHECK_EQ(ida_find_first_range(&ida, 3001, 70000), 70000);
	CHECK_EQ(ida_find_first_range(&ida, 70001, UINT_MAX), INT_MAX);
	CHECK_EQ(ida_find_first_range(&ida, INT_MAX, INT_MAX), INT_MAX);
	CHECK_EQ(ida_find_first_range(&ida, 70001, INT_MAX - 1), -ENOENT);
	CHECK_EQ(ida_find_first_range(&ida, 5, 4), -ENOENT);                /* min > max */
	CHECK_EQ(ida_find_first_range(&ida, (unsigned)INT_MAX + 1, UINT_MAX), -EINVAL);
	CHECK_EQ(ida_find_first_range(&ida, UINT_MAX, UINT_MAX), -EINVAL);
	CHECK_EQ(tu_calls(), calls);
	CHECK_EQ(ida_memory_usage(&ida), bytes);

	ida_free(&ida, 3);
	ida_free(&ida, 1023);
	CHECK_EQ(ida_find_first(&ida), 1024);
	CHECK_EQ(ida_find_first_range(&ida, 0, 1023), -ENOENT); /* chunk 0 is gone */
	for (unsigned i = 2; i < sizeof(ids) / sizeof(ids[0]); i++)
		ida_free(&ida, ids[i]);
	CHECK_EQ(ida_find_first(&ida), -ENOENT);
	CHECK_EQ(ida_check(&ida), 0);
	CHECK_EQ(ida_memory_usage(&ida), 0);
	CHECK_EQ(tu_diag_count(), 0);
}
