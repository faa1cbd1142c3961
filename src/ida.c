/* SPDX-License-Identifier: MIT */
/*
 * The ida: the same radix tree, one level shorter in effect, whose leaf
 * slots point at 1024-bit bitmaps.  A leaf slot's free bit means "this
 * bitmap is absent or not full", so the tree search finds the first chunk
 * with room and the bitmap search finishes the job.  Dense cost: 128 bytes
 * per 1024 IDs plus one 520-byte node per 65536 IDs.
 */
#include <string.h>

#include "internal.h"

#define CHUNK_BYTES (IDA_CHUNK_WORDS * sizeof(uint64_t))

void ida_init(struct ida *ida)
{
	static const struct ida empty = IDA_INIT(empty);

	*ida = empty;
}

static void free_bitmap(void *bitmap)
{
	mem_free(bitmap, CHUNK_BYTES);
}

void ida_destroy(struct ida *ida)
{
	idr__lock_fast(&ida->ida_rt);
	tree_destroy(&ida->ida_rt, free_bitmap);
	__atomic_store_n(&ida->ida_bitmaps, 0, __ATOMIC_RELAXED);
	ida->ida_hint = NULL;
	idr__unlock_fast(&ida->ida_rt);
}

static uint64_t *chunk_bitmap(const struct ida *ida, uint64_t chunk)
{
	struct idr_node *leaf;
	void **slot = tree_lookup_slot(&ida->ida_rt, chunk, &leaf);

	return slot ? *slot : NULL;
}

/* The first bit at or after @from that is clear (@clear) or set (not
 * @clear), or IDA_CHUNK_IDS.  Inline with @clear a constant, each caller
 * gets its own loop. */
static inline unsigned first_bit(const uint64_t *bitmap, unsigned from, bool clear)
{
	uint64_t flip = clear ? ~(uint64_t)0 : 0;

	for (unsigned w = from / 64; w < IDA_CHUNK_WORDS; w++) {
		uint64_t bits = bitmap[w] ^ flip;
		if (w == from / 64)
			bits &= ~(uint64_t)0 << (from % 64);
		if (bits)
			return w * 64 + (unsigned)__builtin_ctzll(bits);
	}
	return IDA_CHUNK_IDS;
}

static unsigned first_zero(const uint64_t *bitmap, unsigned from)
{
	return first_bit(bitmap, from, true);
}

static bool bitmap_full(const uint64_t *bitmap)
{
	for (unsigned w = 0; w < IDA_CHUNK_WORDS; w++)
		if (~bitmap[w])
			return false;
	return true;
}

static bool bitmap_empty(const uint64_t *bitmap)
{
	for (unsigned w = 0; w < IDA_CHUNK_WORDS; w++)
		if (bitmap[w])
			return false;
	return true;
}

static void set_bit_in(uint64_t *bitmap, unsigned b)
{
	bitmap[b / 64] |= (uint64_t)1 << (b % 64);
}

/* A new chunk holding only bit @b, its bitmap in *@out: bitmap and tree
 * nodes are obtained before anything changes.
 * Nothing reads an ida's tree outside its lock, so the nodes it frees need
 * no grace period.  IDA_INIT() says so with IDR_F_NO_RCU; a zero-filled
 * ida (calloc(), memset()) is told here, before its tree's first node. */
static int add_chunk(struct ida *ida, uint64_t chunk, unsigned b, uint64_t **out)
{
	ida->ida_rt.idr_flags |= IDR_F_NO_RCU;
	struct node_pool pool = { .count = 0 };
	struct insert_need need = tree_needs(&ida->ida_rt, chunk, NULL, false);
	uint64_t *bitmap = mem_alloc(CHUNK_BYTES);

	if (!bitmap)
		return -ENOMEM;
	if (need.full && pool_fill(&pool, KIND_PLAIN, need)) {
		mem_free(bitmap, CHUNK_BYTES);
		return -ENOMEM;
	}
	memset(bitmap, 0, CHUNK_BYTES);
	set_bit_in(bitmap, b);
	tree_insert(&ida->ida_rt, chunk, &pool, bitmap, false, false);
	count_add(&ida->ida_bitmaps, 1);
	*out = bitmap;
	return 0;
}

/*
 * The allocation hint, as the idr's (tree.c): the bitmap the last
 * allocation used, the lowest of its bits that may be clear, and whether
 * every chunk below it is full (known when that search started at 0).
 * While the answer must lie in that bitmap, no walk is needed, and the scan
 * starts at the first word that may have room.
 */
static void ida_hint_set(struct ida *ida, uint64_t *bitmap, uint64_t chunk,
		     unsigned low, uint64_t min)
{
	ida->ida_hint = bitmap;
	ida->ida_hint_chunk = (unsigned)chunk;
	ida->ida_hint_low = low;
	ida->ida_hint_full = min == 0;
}

/* @chunk's @bitmap has just filled: the tree learns it, and the hint lets
 * it go.  Out of line: a call on claim()'s path cost every allocation the
 * registers kept across it. */
__attribute__((noinline)) static void chunk_filled(struct ida *ida, uint64_t *bitmap,
						   uint64_t chunk)
{
	tree_mark_full(&ida->ida_rt, chunk);
	if (ida->ida_hint == bitmap)
		ida->ida_hint = NULL;
}

/* Take bit @b of @chunk's @bitmap; the tree learns when it fills. */
static inline void claim(struct ida *ida, uint64_t *bitmap, uint64_t chunk, unsigned b)
{
	set_bit_in(bitmap, b);
	if (__builtin_expect(!~bitmap[b / 64], 0) && bitmap_full(bitmap))
		chunk_filled(ida, bitmap, chunk);
}

/* The ID, if the hint holds the lowest free one in [@min, @max]; -1 if it
 * cannot tell. */
static long ida_hint_alloc(struct ida *ida, uint64_t min, uint64_t max)
{
	uint64_t *bitmap = ida->ida_hint;
	uint64_t chunk = ida->ida_hint_chunk, base = chunk << IDA_CHUNK_BITS;
	long start;

	if (!bitmap || (start = hint_from(min, base, IDA_CHUNK_IDS, &ida->ida_hint_full)) < 0)
		return -1;
	unsigned from = (unsigned)start;
	bool lowest = from <= ida->ida_hint_low;
	unsigned b = first_zero(bitmap, lowest ? ida->ida_hint_low : from);
	if (b == IDA_CHUNK_IDS || base + b > max)
		return -1;
	if (lowest)
		ida->ida_hint_low = b + 1;
	claim(ida, bitmap, chunk, b);
	return (long)(base + b);
}

/* alloc_locked() past the hint: a walk, and a new chunk if it takes one.
 * Out of line, so that the hint's allocations pay for none of its stack
 * frame (each instruction costs: bench/README.md). */
__attribute__((noinline)) static int alloc_by_walk(struct ida *ida, uint64_t min, uint64_t max)
{
	for (;;) {
		uint64_t chunk = tree_find_free(&ida->ida_rt, min >> IDA_CHUNK_BITS);
		unsigned from = chunk == min >> IDA_CHUNK_BITS ? min % IDA_CHUNK_IDS : 0;
		uint64_t *bitmap = chunk_bitmap(ida, chunk);
		unsigned b = bitmap ? first_zero(bitmap, from) : from;

		if (b == IDA_CHUNK_IDS) {
			/* Room only below @min in this chunk: any later chunk
			 * the search finds has room from its start. */
			min = (chunk + 1) << IDA_CHUNK_BITS;
			continue;
		}
		uint64_t id = (chunk << IDA_CHUNK_BITS) + b;
		if (id > max)
			return -ENOSPC;
		if (!bitmap) {
			int err = add_chunk(ida, chunk, b, &bitmap);
			if (err)
				return err;
		} else {
			claim(ida, bitmap, chunk, b);
		}
		/* All of [from, b) is taken; with from == 0, all below b. */
		ida_hint_set(ida, bitmap, chunk, from == 0 ? b + 1 : 0, min);
		return (int)id;
	}
}

static int alloc_locked(struct ida *ida, uint64_t min, uint64_t max)
{
	long hinted = ida_hint_alloc(ida, min, max);

	return hinted >= 0 ? (int)hinted : alloc_by_walk(ida, min, max);
}

int ida_alloc_range(struct ida *ida, unsigned int min, unsigned int max,
		    idr_gfp_t gfp)
{
	(void)gfp;
	if (max > INT_MAX)
		max = INT_MAX;
	if (min > max)
		return -ENOSPC;
	idr__lock_fast(&ida->ida_rt);
	int ret = alloc_locked(ida, min, max);
	idr__unlock_fast(&ida->ida_rt);
	return ret;
}

int ida_alloc(struct ida *ida, idr_gfp_t gfp)
{
	return ida_alloc_range(ida, 0, INT_MAX, gfp);
}

int ida_alloc_min(struct ida *ida, unsigned int min, idr_gfp_t gfp)
{
	return ida_alloc_range(ida, min, INT_MAX, gfp);
}

int ida_alloc_max(struct ida *ida, unsigned int max, idr_gfp_t gfp)
{
	return ida_alloc_range(ida, 0, max, gfp);
}

static bool test_bit_in(const uint64_t *bitmap, unsigned b)
{
	return bitmap && (bitmap[b / 64] >> (b % 64)) & 1;
}

/* A freed bit in the hint's chunk lowers its low mark; one below the chunk
 * withdraws "everything below is full". */
static void ida_forget_below(struct ida *ida, uint64_t chunk, unsigned b)
{
	if (!ida->ida_hint || chunk > ida->ida_hint_chunk)
		return;
	if (chunk < ida->ida_hint_chunk)
		ida->ida_hint_full = 0;
	else if (b < ida->ida_hint_low)
		ida->ida_hint_low = b;
}

void ida_free(struct ida *ida, unsigned int id)
{
	uint64_t chunk = id >> IDA_CHUNK_BITS;
	unsigned b = id % IDA_CHUNK_IDS;

	idr__lock_fast(&ida->ida_rt);
	uint64_t *bitmap = chunk_bitmap(ida, chunk);
	if (!test_bit_in(bitmap, b)) {
		idr__unlock_fast(&ida->ida_rt);
		report("ida_free", "ID %u is not allocated", id);
		return;
	}
	/* Only a word that is all ones (before) or all zeros (after) can make
	 * the bitmap full or empty: scan the rest only then, as claim() does. */
	bool was_full = !~bitmap[b / 64] && bitmap_full(bitmap);
	bitmap[b / 64] &= ~((uint64_t)1 << (b % 64));
	ida_forget_below(ida, chunk, b);
	if (!bitmap[b / 64] && bitmap_empty(bitmap)) {
		if (ida->ida_hint == bitmap)
			ida->ida_hint = NULL;
		tree_release(&ida->ida_rt, chunk, false);
		mem_free(bitmap, CHUNK_BYTES);
		count_add(&ida->ida_bitmaps, -1);
	} else if (was_full) {
		tree_mark_free(&ida->ida_rt, chunk);
	}
	idr__unlock_fast(&ida->ida_rt);
}

bool ida_exists(struct ida *ida, unsigned int id)
{
	idr__lock_fast(&ida->ida_rt);
	bool ret = test_bit_in(chunk_bitmap(ida, id >> IDA_CHUNK_BITS),
			       id % IDA_CHUNK_IDS);
	idr__unlock_fast(&ida->ida_rt);
	return ret;
}

/* The lowest allocated ID in [@min, @max], or -ENOENT.  Every bitmap in
 * the tree has a bit set (ida_free() drops one that empties), so past
 * @min's own chunk the first chunk found holds the answer. */
static int first_used(struct ida *ida, uint64_t min, uint64_t max)
{
	uint64_t chunk = min >> IDA_CHUNK_BITS;
	unsigned from = min % IDA_CHUNK_IDS;

	for (;;) {
		void *bitmap;
		uint64_t found = tree_next_entry(&ida->ida_rt, chunk, max >> IDA_CHUNK_BITS,
						 &bitmap);
		if (found == INDEX_NONE)
			return -ENOENT;
		unsigned b = first_bit(bitmap, found == chunk ? from : 0, false);
		if (b < IDA_CHUNK_IDS) {
			uint64_t id = (found << IDA_CHUNK_BITS) + b;
			return id <= max ? (int)id : -ENOENT;
		}
		/* @min's chunk has IDs only below @min. */
		chunk = found + 1;
		from = 0;
	}
}

int ida_find_first_range(struct ida *ida, unsigned int min, unsigned int max)
{
	if (min > INT_MAX)
		return -EINVAL;
	if (max > INT_MAX)
		max = INT_MAX;
	idr__lock_fast(&ida->ida_rt);
	int ret = min > max ? -ENOENT : first_used(ida, min, max);
	idr__unlock_fast(&ida->ida_rt);
	return ret;
}

int ida_find_first(struct ida *ida)
{
	return ida_find_first_range(ida, 0, UINT_MAX);
}

bool ida_is_empty(const struct ida *ida)
{
	return idr_is_empty(&ida->ida_rt);
}

size_t ida_memory_usage(const struct ida *ida)
{
	return idr_memory_usage(&ida->ida_rt) +
	       __atomic_load_n(&ida->ida_bitmaps, __ATOMIC_RELAXED) * CHUNK_BYTES;
}
