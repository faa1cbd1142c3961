/* SPDX-License-Identifier: MIT */
/*
 * Sparse leaves: each form a leaf takes (singleton word, compact leaf, full
 * leaf) and each change between them, seen through the API and through
 * idr_memory_usage(), with idr_check() after every step.  On 32-bit hosts
 * there are no singletons: a compact leaf stands in for each
 * (TU_SINGLETON_COMPACTS).
 */
#include "testutil.h"

static long objs[80];
#define P(i) ((void *)&objs[i])
#define ODD ((void *)((uintptr_t)&objs[0] + 1)) /* no singleton can hold it */

static size_t full_leaf, compact_leaf;

/* Sizes as the idr reports them: a root with one full leaf, one compact. */
static void measure(void)
{
	struct idr idr;

	idr_init(&idr);
	idr_alloc(&idr, P(0), 64, 0, IDR_GFP_KERNEL); /* root + full leaf */
	full_leaf = idr_memory_usage(&idr) / 2;
	idr_alloc(&idr, NULL, 129, 0, IDR_GFP_KERNEL); /* + compact */
	compact_leaf = idr_memory_usage(&idr) - 2 * full_leaf;
	idr_destroy(&idr);
}

/* A root node over two full leaves: IDs 0..64, ID i storing P(i). */
static void init_two_levels(struct idr *idr)
{
	idr_init(idr);
	for (int i = 0; i <= 64; i++)
		idr_alloc(idr, P(i), 0, 0, IDR_GFP_KERNEL);
}

#define MEM(idr, leaves, compacts)                                          \
	do {                                                                \
		if (!full_leaf)                                             \
			measure();                                          \
		CHECK_EQ(idr_memory_usage(idr),                             \
			 (leaves) * full_leaf + (compacts) * compact_leaf); \
	} while (0)

TEST(a_lone_id_costs_no_leaf)
{
	struct idr idr;

	measure();
	CHECK(compact_leaf > 0 && compact_leaf < full_leaf / 8);
	init_two_levels(&idr);
	MEM(&idr, 3, 0); /* root + leaves 0 and 1 */
	CHECK_EQ(idr_alloc(&idr, P(1), 1000, 0, IDR_GFP_KERNEL), 1000);
	MEM(&idr, 3, TU_SINGLETON_COMPACTS); /* a singleton in the root's slot */
	CHECK(idr_find(&idr, 1000) == P(1));
	CHECK(idr_find(&idr, 1001) == NULL);
	CHECK(idr_find(&idr, 999) == NULL);
	CHECK_EQ(idr_check(&idr), 0);
	CHECK(idr_remove(&idr, 1000) == P(1));
	MEM(&idr, 3, 0);
	CHECK(idr_find(&idr, 1000) == NULL);
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

TEST(a_leaf_fills_through_every_form_and_empties_back)
{
	struct idr idr;

	init_two_levels(&idr);
	/* IDs 1001.. in leaf 15: singleton, compact (2..4), full (5..) */
	static const int want_compacts[] = { TU_SINGLETON_COMPACTS, 1, 1, 1, 0, 0 };
	static const int want_leaves[] = { 3, 3, 3, 3, 4, 4 };
	for (int k = 0; k < 6; k++) {
		CHECK_EQ(idr_alloc(&idr, P(k), 1001, 0, IDR_GFP_KERNEL), 1001 + k);
		MEM(&idr, want_leaves[k], want_compacts[k]);
		for (int j = 0; j <= k; j++)
			CHECK(idr_find(&idr, 1001 + (unsigned)j) == P(j));
		CHECK_EQ(idr_check(&idr), 0);
	}
	/* Removing from the top: full until 4 are left, then compact, then
	 * a singleton, then nothing. */
	static const int left_leaves[] = { 4, 3, 3, 3, 3, 3 };
	static const int left_compacts[] = { 0, 1, 1, 1, TU_SINGLETON_COMPACTS, 0 };
	for (int k = 5; k >= 0; k--) {
		CHECK(idr_remove(&idr, 1001 + (unsigned)k) == P(k));
		MEM(&idr, left_leaves[5 - k], left_compacts[5 - k]);
		for (int j = 0; j < k; j++)
			CHECK(idr_find(&idr, 1001 + (unsigned)j) == P(j));
		CHECK(idr_find(&idr, 1001 + (unsigned)k) == NULL);
		CHECK_EQ(idr_check(&idr), 0);
	}
	idr_destroy(&idr);
}

TEST(lowest_free_search_sees_into_sparse_leaves)
{
	struct idr idr;

	init_two_levels(&idr);
	CHECK_EQ(idr_alloc(&idr, P(1), 1000, 0, IDR_GFP_KERNEL), 1000);
	CHECK_EQ(idr_alloc(&idr, P(2), 1000, 0, IDR_GFP_KERNEL), 1001);
	CHECK_EQ(idr_alloc(&idr, P(3), 999, 0, IDR_GFP_KERNEL), 999);
	CHECK_EQ(idr_alloc(&idr, P(4), 999, 0, IDR_GFP_KERNEL), 1002);
	CHECK_EQ(idr_alloc(&idr, P(5), 1000, 1003, IDR_GFP_KERNEL), -ENOSPC);
	/* A singleton at the last offset of its leaf: the search moves on. */
	CHECK_EQ(idr_alloc(&idr, P(6), 2047, 0, IDR_GFP_KERNEL), 2047);
	CHECK_EQ(idr_alloc(&idr, P(7), 2047, 0, IDR_GFP_KERNEL), 2048);
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

TEST(pointers_a_singleton_cannot_hold_go_compact)
{
	struct idr idr;

	init_two_levels(&idr);
	CHECK_EQ(idr_alloc(&idr, ODD, 1000, 0, IDR_GFP_KERNEL), 1000);
	MEM(&idr, 3, 1);
	CHECK(idr_find(&idr, 1000) == ODD);
	CHECK_EQ(idr_alloc(&idr, NULL, 2000, 0, IDR_GFP_KERNEL), 2000);
	MEM(&idr, 3, 2); /* a reservation takes a lane: replace needs no memory */
	long calls = tu_calls();
	CHECK(idr_replace(&idr, ODD, 2000) == NULL);
	CHECK(idr_find(&idr, 2000) == ODD);
	CHECK_EQ(tu_calls(), calls);
	CHECK(idr_remove(&idr, 1000) == ODD);
	MEM(&idr, 3, 1); /* nothing left: the compact leaf went */
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

TEST(replace_in_a_singleton)
{
	struct idr idr;

	init_two_levels(&idr);
	CHECK_EQ(idr_alloc(&idr, P(1), 1000, 0, IDR_GFP_KERNEL), 1000);
	CHECK(idr_replace(&idr, P(2), 1000) == P(1)); /* in the word */
	CHECK(idr_replace(&idr, NULL, 1000) == P(2)); /* unpublished */
	CHECK(idr_find(&idr, 1000) == NULL);
	MEM(&idr, 3, TU_SINGLETON_COMPACTS);
	/* The one case that needs memory: a pointer no singleton can hold. */
	if (TU_SINGLETONS) {
		tu_fail_call(1);
		CHECK(idr_replace(&idr, ODD, 1000) == IDR_ERR_PTR(-ENOMEM));
		CHECK(idr_find(&idr, 1000) == NULL); /* unchanged */
	}
	CHECK(idr_replace(&idr, ODD, 1000) == NULL);
	CHECK(idr_find(&idr, 1000) == ODD);
	MEM(&idr, 3, 1);
	CHECK(idr_replace(&idr, P(3), 1001) == IDR_ERR_PTR(-ENOENT));
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

TEST(iteration_walks_sparse_leaves_in_order)
{
	struct idr idr;
	static const int ids[] = { 1000, 1001, 1003, 5000, 70000, 70001 };
	static const int want[] = { 64, 65, 1000, 1001, 1003, 5000, 70000, 70001 };
	int next = 0, k = 0;
	void *p;

	init_two_levels(&idr);
	CHECK_EQ(idr_alloc(&idr, P(65), 0, 0, IDR_GFP_KERNEL), 65);
	for (int i = 0; i < 6; i++)
		CHECK_EQ(idr_alloc(&idr, P(i), ids[i], 0, IDR_GFP_KERNEL), ids[i]);
	CHECK_EQ(idr_alloc(&idr, NULL, 1002, 0, IDR_GFP_KERNEL), 1002); /* skipped */
	for (int i = 0; i < 64; i++)
		idr_remove(&idr, (unsigned)i);
	/* leaf 1 holds 64 and 65 only now: it went compact */
	idr_for_each_entry(&idr, p, next) {
		CHECK(k < 8);
		CHECK_EQ(next, want[k]);
		CHECK(p == (k < 2 ? P(64 + k) : P(k - 2)));
		k++;
	}
	CHECK_EQ(k, 8);
	next = 1002;
	CHECK(idr_get_next(&idr, &next) == P(2));
	CHECK_EQ(next, 1003);
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

struct stop_at {
	int at, seen[16], n;
};

static int record_until(int id, void *p, void *data)
{
	struct stop_at *s = data;

	(void)p;
	if (s->n < 16)
		s->seen[s->n++] = id;
	return id == s->at ? 100 + s->n : 0;
}

/* idr_for_each() stops at the first nonzero return of its callback and
 * returns it, when the entry is in a compact leaf or a singleton too. */
TEST(a_walk_stopped_inside_a_sparse_leaf_returns_the_callbacks_value)
{
	static const int ids[] = { 1000, 1001, 1003, 3000 };
	static const int stops[] = { 1000, 1001, 1003, 3000, -1 };
	struct idr idr;

	measure();
	idr_init(&idr);
	CHECK_EQ(idr_alloc(&idr, P(70), 0, 0, IDR_GFP_KERNEL), 0);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(idr_alloc(&idr, P(i), ids[i], 0, IDR_GFP_KERNEL), ids[i]);
	CHECK_EQ(idr_memory_usage(&idr), 2 * full_leaf + (1 + TU_SINGLETON_COMPACTS) * compact_leaf); /* 3000: a singleton */
	for (int k = 0; k < 5; k++) {
		struct stop_at s = { .at = stops[k] };
		int ret = idr_for_each(&idr, record_until, &s);
		int want_n = k < 4 ? k + 2 : 5;
		CHECK_EQ(ret, k < 4 ? 100 + want_n : 0);
		CHECK_EQ(s.n, want_n);
		CHECK_EQ(s.seen[0], 0);
		for (int j = 1; j < s.n; j++)
			CHECK_EQ(s.seen[j], ids[j - 1]);
	}
	idr_destroy(&idr);
}

/* idr_get_next() from past the last entry of the last leaf of a node goes
 * on in the node's parent, or higher when that ends too: from a sparse
 * leaf, from a full one, and across two levels at once. */
TEST(iteration_climbs_past_the_end_of_a_node)
{
	struct idr idr;
	int id;

	idr_init(&idr);
	CHECK_EQ(idr_alloc(&idr, P(1), 1, 0, IDR_GFP_KERNEL), 1);
	CHECK_EQ(idr_alloc(&idr, P(2), 4090, 0, IDR_GFP_KERNEL), 4090); /* leaf 63 */
	CHECK_EQ(idr_alloc(&idr, P(3), 262100, 0, IDR_GFP_KERNEL), 262100);
	CHECK_EQ(idr_alloc(&idr, P(4), 300000, 0, IDR_GFP_KERNEL), 300000);
	static const int from[] = { 2, 4091, 4095, 4096, 262101, 262143, 262144 };
	static const int want[] = { 4090, 262100, 262100, 262100, 300000, 300000, 300000 };
	for (int k = 0; k < 7; k++) {
		id = from[k];
		void *p = idr_get_next(&idr, &id);
		CHECK_EQ(id, want[k]);
		CHECK(p == P(want[k] == 4090 ? 2 : want[k] == 262100 ? 3 : 4));
	}
	/* The same past a full leaf whose tail is empty. */
	for (int i = 4032; i < 4090; i++)
		CHECK_EQ(idr_alloc(&idr, P(5), i, 0, IDR_GFP_KERNEL), i);
	for (int i = 4060; i < 4090; i++)
		CHECK(idr_remove(&idr, (unsigned long)i) == P(5));
	id = 4060;
	CHECK(idr_get_next(&idr, &id) == P(2) && id == 4090);
	CHECK(idr_remove(&idr, 4090) == P(2));
	id = 4060;
	CHECK(idr_get_next(&idr, &id) == P(3) && id == 262100);
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

/* idr_get_next() resumes at the twig (the node above the leaves) its last
 * call searched, if no twig has left any tree since.  Here the twig of IDs
 * 4096..8191 empties and goes between two calls, and another takes its
 * place under the same root: the next call must read the new one.  Freed
 * nodes are kept zeroed, so the old twig, if read, would show no entries
 * and the call would skip to ID 9000.  Nodes of an IDR_F_NO_RCU idr are
 * freed at once, the others after a grace period. */
static void resume_after_twig_left(unsigned flags)
{
	struct idr idr;
	int id = 4097;

	tu_hold_freed(true);
	idr_init_flags(&idr, 0, flags);
	CHECK_EQ(idr_alloc(&idr, P(1), 10, 0, IDR_GFP_KERNEL), 10);
	CHECK_EQ(idr_alloc(&idr, P(2), 5000, 0, IDR_GFP_KERNEL), 5000);
	CHECK_EQ(idr_alloc(&idr, P(3), 7000, 0, IDR_GFP_KERNEL), 7000);
	CHECK_EQ(idr_alloc(&idr, P(4), 9000, 0, IDR_GFP_KERNEL), 9000);
	CHECK(idr_get_next(&idr, &id) == P(2) && id == 5000);
	CHECK(idr_remove(&idr, 5000) == P(2));
	CHECK(idr_remove(&idr, 7000) == P(3));
	idr_rcu_barrier(); /* the twig is freed */
	CHECK_EQ(idr_alloc(&idr, P(5), 6000, 0, IDR_GFP_KERNEL), 6000);
	id = 5001;
	CHECK(idr_get_next(&idr, &id) == P(5) && id == 6000);
	/* The same after idr_destroy(), at the same address. */
	idr_destroy(&idr);
	idr_rcu_barrier();
	CHECK_EQ(idr_alloc(&idr, P(6), 6500, 0, IDR_GFP_KERNEL), 6500);
	CHECK_EQ(idr_alloc(&idr, P(7), 9000, 0, IDR_GFP_KERNEL), 9000);
	id = 6001;
	CHECK(idr_get_next(&idr, &id) == P(6) && id == 6500);
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

TEST(a_walk_resumed_after_its_twig_left_reads_the_new_one)
{
	resume_after_twig_left(0);
	if (!tu_failed())
		resume_after_twig_left(IDR_F_NO_RCU);
}

/* An idr initialized again without idr_destroy() leaks its nodes, and no
 * twig leaves a tree: the remembered twig is told apart by the root. */
TEST(an_idr_initialized_over_a_leaked_one_shares_no_walk)
{
	struct idr idr, leaked;
	int id = 0;

	idr_init(&idr);
	CHECK_EQ(idr_alloc(&idr, P(1), 5000, 0, IDR_GFP_KERNEL), 5000);
	CHECK(idr_get_next(&idr, &id) == P(1) && id == 5000);
	leaked = idr; /* only so that the test can free it */
	idr_init(&idr);
	CHECK_EQ(idr_alloc(&idr, P(2), 6000, 0, IDR_GFP_KERNEL), 6000);
	id = 5001;
	CHECK(idr_get_next(&idr, &id) == P(2) && id == 6000);
	id = 4096;
	CHECK(idr_get_next(&leaked, &id) == P(1) && id == 5000);
	idr_destroy(&leaked);
	idr_destroy(&idr);
}

/* Two walks in turn, of two idrs with IDs in the same twig ranges: each
 * call gets its own idr's entries. */
TEST(walks_of_two_idrs_in_turn_stay_apart)
{
	struct idr a, b;
	int ia = 0, ib = 0, seen = 0;

	idr_init(&a);
	idr_init(&b);
	for (int i = 0; i < 40; i++) {
		CHECK_EQ(idr_alloc(&a, P(i), 100 * i + 1, 0, IDR_GFP_KERNEL), 100 * i + 1);
		CHECK_EQ(idr_alloc(&b, P(i + 40), 100 * i + 2, 0, IDR_GFP_KERNEL),
			 100 * i + 2);
	}
	for (;; ia++, ib++, seen++) {
		void *pa = idr_get_next(&a, &ia), *pb = idr_get_next(&b, &ib);
		if (!pa || !pb) {
			CHECK(!pa && !pb);
			break;
		}
		CHECK(pa == P(seen) && ia == 100 * seen + 1);
		CHECK(pb == P(seen + 40) && ib == 100 * seen + 2);
	}
	CHECK_EQ(seen, 40);
	idr_destroy(&a);
	idr_destroy(&b);
}

TEST(a_sparse_leaf_under_the_root_keeps_the_height)
{
	struct idr idr;

	init_two_levels(&idr);
	for (unsigned i = 0; i < 64; i++)
		if (i != 5)
			CHECK(idr_remove(&idr, i) == P(i));
	MEM(&idr, 2, TU_SINGLETON_COMPACTS);
	CHECK(idr_remove(&idr, 64) == P(64));
	/* Leaf 0 has turned into a singleton word, and a tree whose root
	 * would be that word keeps its root node instead. */
	MEM(&idr, 1, TU_SINGLETON_COMPACTS);
	CHECK(idr_find(&idr, 5) == P(5));
	CHECK(idr_find(&idr, 64) == NULL);
	CHECK_EQ(idr_check(&idr), 0);
	CHECK_EQ(idr_alloc(&idr, P(0), 0, 0, IDR_GFP_KERNEL), 0);
	MEM(&idr, 1, 1);
	CHECK(idr_find(&idr, 0) == P(0));
	CHECK(idr_find(&idr, 5) == P(5));
	/* Filled up, leaf 0 is a full leaf again, and the root level goes
	 * (a fuzzer find: the check flagged the unneeded level). */
	for (int i = 1; i <= 4; i++)
		CHECK_EQ(idr_alloc(&idr, P(i), 0, 0, IDR_GFP_KERNEL), i);
	MEM(&idr, 1, 0);
	CHECK_EQ(idr_check(&idr), 0);
	for (unsigned i = 0; i <= 5; i++)
		CHECK(idr_remove(&idr, i) == P(i));
	CHECK(idr_is_empty(&idr));
	CHECK_EQ(idr_memory_usage(&idr), 0);
	idr_destroy(&idr);
}

/* A node emptied by its last sparse leaf's removal is unlinked from its
 * parent, whose other children keep their free bits: here the parent's
 * first child, full, stays marked full (its bit sits at the offset the
 * removed ID had in its own node), and the next allocation looks past it. */
TEST(unlinking_an_emptied_node_marks_no_sibling_free)
{
	struct idr idr;
	int obj;

	idr_init(&idr);
	for (int i = 0; i < 4096; i++) /* the root's first child: full */
		CHECK_EQ(idr_alloc(&idr, &obj, i, 0, IDR_GFP_KERNEL), i);
	/* Alone under the root's second child, at its first leaf offset; and
	 * one ID under the third child, so the root keeps two children. */
	CHECK_EQ(idr_alloc(&idr, &obj, 4096 + 7, 0, IDR_GFP_KERNEL), 4096 + 7);
	CHECK_EQ(idr_alloc(&idr, &obj, 8192 + 7, 0, IDR_GFP_KERNEL), 8192 + 7);
	CHECK(idr_remove(&idr, 4096 + 7) == &obj);
	CHECK_EQ(idr_check(&idr), 0);
	CHECK_EQ(idr_alloc(&idr, &obj, 0, 0, IDR_GFP_KERNEL), 4096);
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

/* The last removal frees the root, and the directory with it: one built
 * over 9 leaves stays small enough beside the last leaf and the root to be
 * kept until then, and would name freed leaves to idr_find()'s inline fast
 * path if left behind. */
TEST(emptying_a_tree_with_a_directory_drops_it)
{
	struct idr idr;
	int obj;

	idr_init(&idr);
	for (int i = 64; i < 10 * 64; i++)
		CHECK_EQ(idr_alloc(&idr, &obj, i, 0, IDR_GFP_KERNEL), i);
	CHECK(idr.idr_dir != NULL);
	for (unsigned long i = 10 * 64 - 1; i >= 128; i--)
		CHECK(idr_remove(&idr, i) == &obj);
	CHECK(idr.idr_dir != NULL); /* beside the last leaf and the root */
	for (unsigned long i = 64; i < 128; i++)
		CHECK(idr_remove(&idr, i) == &obj);
	CHECK(idr_is_empty(&idr));
	CHECK(idr.idr_dir == NULL);
	CHECK_EQ(idr_memory_usage(&idr), 0);
	CHECK(idr_find(&idr, 64) == NULL);
	idr_destroy(&idr);
}

TEST(removal_copes_when_the_allocator_refuses)
{
	struct idr idr;

	measure();
	init_two_levels(&idr);
	for (int i = 0; i < 59; i++)
		idr_remove(&idr, (unsigned)i);
	/* 59..63 are left in leaf 0.  Below 5 entries it would become
	 * compact, but every allocator call fails: it stays full, correct. */
	size_t before = idr_memory_usage(&idr);
	tu_fail_thread(true);
	CHECK(idr_remove(&idr, 63) == P(63));
	CHECK(idr_remove(&idr, 62) == P(62));
	tu_fail_thread(false);
	CHECK_EQ(idr_memory_usage(&idr), before);
	CHECK(idr_find(&idr, 61) == P(61));
	CHECK_EQ(idr_check(&idr), 0);
	CHECK(idr_remove(&idr, 61) == P(61)); /* now it may shrink */
	CHECK_EQ(idr_memory_usage(&idr), before - full_leaf + compact_leaf);
	CHECK(idr_find(&idr, 60) == P(60));
	CHECK(idr_find(&idr, 59) == P(59));
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

TEST(old_api_reserve_builds_full_leaves_only)
{
	struct idr idr;
	int id;

	init_two_levels(&idr);
	CHECK_EQ(idr_alloc(&idr, P(1), 1000, 0, IDR_GFP_KERNEL), 1000);
	CHECK_EQ(idr_alloc(&idr, P(3), 2000, 0, IDR_GFP_KERNEL), 2000);
	CHECK_EQ(idr_alloc(&idr, P(4), 2001, 0, IDR_GFP_KERNEL), 2001);
	MEM(&idr, 3, 1 + TU_SINGLETON_COMPACTS); /* a singleton, and a compact leaf with 2 lanes free */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	CHECK(idr_pre_get(&idr, IDR_GFP_KERNEL));
	CHECK_EQ(idr_get_new_above(&idr, P(2), 1001, &id), 0);
	CHECK_EQ(id, 1001);
	CHECK(idr_pre_get(&idr, IDR_GFP_KERNEL));
	CHECK_EQ(idr_get_new_above(&idr, P(5), 2000, &id), 0);
#pragma GCC diagnostic pop
	CHECK_EQ(id, 2002);
	idr_rcu_barrier(); /* the compact leaf's deferred free */
	MEM(&idr, 5, 0);
	CHECK(idr_find(&idr, 1000) == P(1));
	CHECK(idr_find(&idr, 1001) == P(2));
	CHECK(idr_find(&idr, 2000) == P(3) && idr_find(&idr, 2001) == P(4));
	CHECK(idr_find(&idr, 2002) == P(5) && idr_find(&idr, 2003) == NULL);
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

/* Indices count from the base's leaf (docs/design.md): a base costs the
 * tree no levels, and the leaf at the base starts full, as dense
 * allocation from the base will fill it, even under interior nodes that an
 * ID far above put there first. */
TEST(a_base_costs_no_levels_and_its_leaf_starts_full)
{
	static const int bases[] = { 1, 100, 1 << 20 };

	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		int base = bases[i], last = base | 63;
		struct idr idr;

		idr_init_base(&idr, base);
		CHECK_EQ(idr_alloc(&idr, P(0), 0, 0, IDR_GFP_KERNEL), base);
		MEM(&idr, 1, 0); /* the root is the leaf */
		idr_destroy(&idr);

		idr_init_base(&idr, base);
		CHECK_EQ(idr_alloc(&idr, P(64), base + 100000, 0, IDR_GFP_KERNEL),
			 base + 100000);
		MEM(&idr, 2, TU_SINGLETON_COMPACTS); /* a root over a node over a singleton */
		for (int id = base; id <= last; id++) {
			CHECK_EQ(idr_alloc(&idr, P(id & 63), 0, 0, IDR_GFP_KERNEL), id);
			MEM(&idr, 4, TU_SINGLETON_COMPACTS); /* and a node over one full leaf */
		}
		for (int id = base; id <= last; id++)
			CHECK(idr_find(&idr, (unsigned long)id) == P(id & 63));
		CHECK(idr_find(&idr, (unsigned long)base - 1) == NULL);
		CHECK(idr_find(&idr, (unsigned long)base + 100000) == P(64));
		CHECK_EQ(idr_check(&idr), 0);
		idr_destroy(&idr);
	}
}
