/* SPDX-License-Identifier: MIT */
/*
 * Allocation-failure injection: every operation that can allocate is run
 * with its k-th allocator call failing, for every k up to the number of
 * calls it makes.  Each failure must return -ENOMEM and leave the structure
 * and the heap exactly as they were, except a refused lookup directory,
 * which only speeds lookups up: the allocation succeeds without it.
 */
#include <string.h>

/* The compat case below uses the old API on purpose. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include "../src/internal.h"
#include "testutil.h"

static int obj;
#define P ((void *)&obj)

/* What the API shows of an idr, at a set of probe IDs. */
struct snapshot {
	void *found[16];
	bool empty;
	size_t mem;
	unsigned cursor;
};

static const unsigned long probes[16] = {
	0, 1, 2, 63, 64, 65, 4095, 4096, 1u << 20, (1u << 20) + 1,
	INT_MAX - 1, INT_MAX, (unsigned long)INT_MAX + 1, UINT32_MAX - 1,
	UINT32_MAX, 1000
};

static void snap(const struct idr *idr, struct snapshot *s)
{
	for (int i = 0; i < 16; i++)
		s->found[i] = idr_find(idr, probes[i]);
	s->empty = idr_is_empty(idr);
	s->mem = idr_memory_usage(idr);
	s->cursor = idr_get_cursor(idr);
}

static bool same(const struct snapshot *a, const struct snapshot *b)
{
	return !memcmp(a->found, b->found, sizeof(a->found)) &&
	       a->empty == b->empty && a->mem == b->mem && a->cursor == b->cursor;
}

struct scenario {
	int base;
	void (*setup)(struct idr *idr);
	int (*op)(struct idr *idr); /* < 0: errno */
	int want;                   /* result once nothing fails */
	int calls;                  /* allocator calls the op makes */
	bool dir_last;              /* the last of them is for the directory */
};

/* Call k failed and @idr's op succeeded anyway: only right if that call was
 * for the directory, which is then the one the idr had before. */
static bool went_without_dir(const struct scenario *s, struct idr *idr,
			     int k, int ret, const struct leafdir *had)
{
	bool ok = s->dir_last && k == s->calls && ret == s->want &&
		  dir_load(idr) == had && idr_find(idr, (unsigned long)ret) == P &&
		  idr_check(idr) == 0;

	if (!ok)
		fprintf(stderr, "    call %d failed, yet the op returned %d\n", k, ret);
	return ok;
}

/* Run @s with call k failing for every k; returns how many k failed, less
 * one for a refused directory the op went without. */
static int inject(const struct scenario *s)
{
	int failures = 0;

	for (int k = 1;; k++) {
		struct idr idr;
		struct snapshot before, after;

		idr_init_base(&idr, s->base);
		if (s->setup)
			s->setup(&idr);
		snap(&idr, &before);
		const struct leafdir *had = dir_load(&idr);
		long live = tu_settled_live();
		long calls = tu_calls();
		tu_fail_call(k);
		int ret = s->op(&idr);
		tu_fail_call(0);
		long made = tu_calls() - calls;
		if (ret != -ENOMEM && k <= made) {
			bool ok = went_without_dir(s, &idr, k, ret, had);
			idr_destroy(&idr);
			if (!ok)
				return -1;
			continue;
		}
		if (ret == -ENOMEM) {
			snap(&idr, &after);
			if (!same(&before, &after) || tu_settled_live() != live) {
				fprintf(stderr, "    call %d: state changed\n", k);
				idr_destroy(&idr);
				return -1;
			}
			failures++;
		} else {
			idr_destroy(&idr);
			if (ret != s->want || made != s->calls || k <= made)
				fprintf(stderr, "    k=%d: ret %d (want %d), %ld calls (want %d)\n",
					k, ret, s->want, made, s->calls);
			return ret == s->want && made == s->calls && k > made ?
				       failures : -1;
		}
		idr_destroy(&idr);
	}
}

static void fill_leaf(struct idr *idr)
{
	for (int i = 0; i < 64; i++)
		idr_alloc(idr, P, 0, 0, IDR_GFP_KERNEL);
}

static void one_id(struct idr *idr)
{
	idr_alloc(idr, P, 0, 0, IDR_GFP_KERNEL);
}

static void spread(struct idr *idr)
{
	static const int ids[] = { 0, 5000, 300000, 1 << 24 };

	for (int i = 0; i < 4; i++)
		idr_alloc(idr, P, ids[i], 0, IDR_GFP_KERNEL);
	idr_set_cursor(idr, 1 << 24);
}

/* 2048 full leaves: the lookup directory, doubled from 64 while small,
 * covers exactly them (src/dir.c), so the next leaf needs it larger. */
#define DIR_FULL_LEAVES 2048
static void fill_dir(struct idr *idr)
{
	for (int i = 0; i < DIR_FULL_LEAVES * 64; i++)
		idr_alloc(idr, P, 0, 0, IDR_GFP_KERNEL);
	const struct leafdir *d = dir_load(idr);
	if (!d || d->cap != DIR_FULL_LEAVES)
		tu_fail(__FILE__, __LINE__, "the directory does not end where the leaves do");
}

/* From 2^24 up, a span directory grown by a quarter at a time: after 592
 * full leaves it ends where they do (src/dir.c), so the next leaf, in the
 * same parent, needs it larger. */
#define SPAN_FROM (1 << 24)
#define SPAN_FULL_LEAVES 592
static void fill_span_dir(struct idr *idr)
{
	for (int i = 0; i < SPAN_FULL_LEAVES * 64; i++)
		idr_alloc(idr, P, SPAN_FROM, 0, IDR_GFP_KERNEL);
	const struct leafdir *d = dir_load(idr);
	if (!d || d->first != SPAN_FROM >> 6 || d->cap != SPAN_FULL_LEAVES)
		tu_fail(__FILE__, __LINE__, "no span directory ending where the leaves do");
}

static int alloc_span(struct idr *idr)
{
	return idr_alloc(idr, P, SPAN_FROM, 0, IDR_GFP_KERNEL);
}

/* ID 0, 300 full leaves from 2^24, then IDs from 2^28 until the one whose
 * leaf moves the window there: a window is the only directory such an idr
 * affords, and it moves once the full leaves it misses outnumber its own
 * four to one (src/dir.c). */
#define WIN_A (1 << 24)
#define WIN_B (1 << 28)
static long window_stays_for = -1; /* IDs from WIN_B before the move */

/* Up to @limit IDs from WIN_B; how many went in before the window moved. */
static long fill_window(struct idr *idr, long limit)
{
	idr_alloc(idr, P, 0, 1, IDR_GFP_KERNEL);
	for (int i = 0; i < 300 * 64; i++)
		idr_alloc(idr, P, WIN_A, 0, IDR_GFP_KERNEL);
	const struct leafdir *d = dir_load(idr);
	for (long n = 0; n < limit; n++) {
		idr_alloc(idr, P, WIN_B, 0, IDR_GFP_KERNEL);
		if (dir_load(idr) != d)
			return n;
	}
	return limit;
}

/* How many IDs from WIN_B go in before the window moves: found once, on a
 * trial idr. */
static long window_moves_after(void)
{
	if (window_stays_for < 0) {
		struct idr trial;
		idr_init(&trial);
		window_stays_for = fill_window(&trial, 2000 * 64);
		idr_destroy(&trial);
		if (window_stays_for < 1200 * 64 || window_stays_for >= 2000 * 64)
			tu_fail(__FILE__, __LINE__, "the window does not move after 4 x 300 leaves");
	}
	return window_stays_for;
}

static void fill_window_dir(struct idr *idr)
{
	fill_window(idr, window_moves_after());
}

static int alloc_window(struct idr *idr)
{
	return idr_alloc(idr, P, WIN_B, 0, IDR_GFP_KERNEL);
}

static int alloc_low(struct idr *idr)
{
	return idr_alloc(idr, P, 0, 0, IDR_GFP_KERNEL);
}

static int alloc_far(struct idr *idr)
{
	return idr_alloc(idr, P, 1 << 20, 0, IDR_GFP_KERNEL);
}

static int alloc_null_far(struct idr *idr)
{
	return idr_alloc(idr, NULL, INT_MAX, 0, IDR_GFP_NOWAIT);
}

static int alloc_u32_top(struct idr *idr)
{
	uint32_t id = UINT32_MAX;
	int err = idr_alloc_u32(idr, P, &id, UINT32_MAX, IDR_GFP_KERNEL);

	return err ? err : id == UINT32_MAX ? 1 : -1;
}

static int alloc_cyclic_wrap(struct idr *idr)
{
	/* the cursor sits on 1 << 24, which is taken: wraps to 1 << 23 */
	return idr_alloc_cyclic(idr, P, 1 << 23, (1 << 24) + 1, IDR_GFP_KERNEL);
}

TEST(every_allocation_failure_leaves_idr_unchanged)
{
	const struct scenario s[] = {
		{ 0, NULL, alloc_low, 0, 1, false },
		{ 0, fill_leaf, alloc_low, 64, 2, false },
		{ 0, one_id, alloc_far, 1 << 20, 6, false },
		/* 5 levels on top, 4 below, and a compact leaf for the NULL */
		{ 0, one_id, alloc_null_far, INT_MAX, 10, false },
		/* the same, but the entry fits in a singleton word (on a
		 * 32-bit host, a compact leaf) */
		{ 0, one_id, alloc_u32_top, 1, 9 + TU_SINGLETON_COMPACTS, false },
		{ 0, spread, alloc_far, (1 << 20), 3, false },
		{ 0, spread, alloc_cyclic_wrap, 1 << 23, 3, false },
		/* base 1: indices count from 0, so 2^20 starts its leaf: 3
		 * levels and a full leaf, as with base 0 */
		{ 1, NULL, alloc_far, 1 << 20, 4, false },
		/* base 100: indices count from 64, so the first ID is in a
		 * root leaf */
		{ 100, NULL, alloc_low, 100, 1, false },
		{ 1, one_id, alloc_u32_top, 1, 9 + TU_SINGLETON_COMPACTS, false },
		/* a leaf, its parent, and a lookup directory twice as large */
		{ 0, fill_dir, alloc_low, DIR_FULL_LEAVES * 64, 3, true },
		/* a leaf and a larger span directory */
		{ 0, fill_span_dir, alloc_span, SPAN_FROM + SPAN_FULL_LEAVES * 64, 2, true },
		/* a leaf and the window moved to it */
		{ 0, fill_window_dir, alloc_window, WIN_B + (int)window_moves_after(), 2, true },
	};
	int points = 0;

	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		int n = inject(&s[i]);
		int want = s[i].calls - s[i].dir_last;
		if (n != want)
			fprintf(stderr, "    scenario %zu: %d failure points\n", i, n);
		CHECK_EQ(n, want);
		points += n;
	}
	CHECK_EQ(points, 52 + 2 * TU_SINGLETON_COMPACTS);
}

TEST(removal_never_allocates)
{
	struct idr idr;

	idr_init(&idr);
	spread(&idr);
	tu_fail_thread(true);
	CHECK(idr_remove(&idr, 300000) == P);
	CHECK(idr_replace(&idr, NULL, 5000) == P);
	CHECK(idr_remove(&idr, 5000) == NULL);
	CHECK(idr_find(&idr, 1 << 24) == P);
	tu_fail_thread(false);
	idr_destroy(&idr);
}

static size_t refused_bytes;
static bool refuse_bytes(size_t size)
{
	return size == refused_bytes;
}

/* Blocks held, the stash's among them (tu_settled_live() empties it). */
static long held(void)
{
	idr_rcu_barrier();
	return tu_live();
}

/* The state snapshot() cannot see: the nodes in this thread's stash.  A
 * failed allocation must put back the ones it took from there, or the next
 * allocation under the same preload would call the allocator for them. */
TEST(a_failure_puts_the_stash_nodes_it_took_back_in_the_stash)
{
	struct idr idr;
	struct snapshot before, after;

	idr_init(&idr);
	one_id(&idr);
	idr_preload_drain();
	long live = held();

	/* A stash of plain nodes without its compact leaf.  The reservation
	 * at INT_MAX takes 9 nodes from it, then is refused the leaf. */
	refused_bytes = kind_bytes(KIND_COMPACT);
	tu_fail_if(refuse_bytes);
	idr_preload(IDR_GFP_KERNEL);
	CHECK_EQ(held(), live + IDR_PRELOAD_NODES);
	snap(&idr, &before);
	CHECK_EQ(alloc_null_far(&idr), -ENOMEM);
	snap(&idr, &after);
	CHECK(same(&before, &after));
	CHECK_EQ(held(), live + IDR_PRELOAD_NODES);
	/* With plain nodes refused instead, it must find its 9 in the stash. */
	refused_bytes = kind_bytes(KIND_PLAIN);
	long calls = tu_calls();
	CHECK_EQ(alloc_null_far(&idr), INT_MAX);
	CHECK_EQ(tu_calls() - calls, 1); /* the compact leaf */

	/* One plain node left in the stash; 2^20 needs 3 nodes.  The
	 * allocator refuses the second; the first goes back. */
	snap(&idr, &before);
	live = held();
	calls = tu_calls();
	CHECK_EQ(idr_alloc(&idr, P, 1 << 20, 0, IDR_GFP_NOWAIT), -ENOMEM);
	CHECK_EQ(tu_calls() - calls, 1);
	snap(&idr, &after);
	CHECK(same(&before, &after));
	CHECK_EQ(held(), live);
	tu_fail_if(NULL);
	calls = tu_calls();
	CHECK_EQ(idr_alloc(&idr, P, 1 << 20, 0, IDR_GFP_NOWAIT), 1 << 20);
	CHECK_EQ(tu_calls() - calls, 2);
	idr_preload_end();
	CHECK(idr_check(&idr) == 0);
	idr_destroy(&idr);
	idr_preload_drain();
}

static int ida_far(struct ida *ida)
{
	return ida_alloc_min(ida, 1u << 25, IDR_GFP_KERNEL);
}

TEST(every_ida_allocation_failure_leaves_ida_unchanged)
{
	int failures = 0;

	for (int k = 1;; k++) {
		struct ida ida;

		ida_init(&ida);
		CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), 0);
		size_t mem = ida_memory_usage(&ida);
		long live = tu_settled_live();
		tu_fail_call(k);
		int ret = ida_far(&ida);
		tu_fail_call(0);
		if (ret == -ENOMEM) {
			CHECK_EQ(ida_memory_usage(&ida), mem);
			CHECK_EQ(tu_settled_live(), live);
			CHECK(!ida_exists(&ida, 1u << 25));
			CHECK(ida_exists(&ida, 0));
			CHECK_EQ(ida_alloc_min(&ida, 1, IDR_GFP_KERNEL), 1);
			failures++;
			ida_destroy(&ida);
			continue;
		}
		CHECK_EQ(ret, 1 << 25);
		ida_destroy(&ida);
		break;
	}
	/* the bitmap, then 2 new levels (height 1 -> 3: chunk 32768) and
	 * a 2-node path */
	CHECK_EQ(failures, 5);
}

TEST(compat_pre_get_failure_is_reported_and_harmless)
{
	struct idr idr;
	int id = -1;

	idr_init(&idr);
	tu_fail_call(1);
	CHECK_EQ(idr_pre_get(&idr, IDR_GFP_KERNEL), 0);
	CHECK_EQ(idr_get_new(&idr, P, &id), -EAGAIN);
	CHECK_EQ(id, -1);
	CHECK(idr_is_empty(&idr));
	CHECK_EQ(idr_pre_get(&idr, IDR_GFP_KERNEL), 1);
	CHECK_EQ(idr_get_new(&idr, P, &id), 0);
	CHECK_EQ(id, 0);
	idr_destroy(&idr);
}
