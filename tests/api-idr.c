/* SPDX-License-Identifier: MIT */
/* The idr's public API, call by call, with exact expectations. */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static int objs[64];
#define P(i) ((void *)&objs[i])

static DEFINE_IDR(static_idr);

TEST(empty_idr_holds_nothing)
{
	struct idr idr;
	int next = 0;

	idr_init(&idr);
	CHECK(idr_is_empty(&idr));
	CHECK_EQ(idr_memory_usage(&idr), 0);
	CHECK(idr_find(&idr, 0) == NULL);
	CHECK(idr_find(&idr, ~0UL) == NULL);
	CHECK(idr_remove(&idr, 0) == NULL);
	CHECK(idr_replace(&idr, P(0), 0) == IDR_ERR_PTR(-ENOENT));
	CHECK(idr_get_next(&idr, &next) == NULL);
	CHECK_EQ(next, 0);
	idr_destroy(&idr);
	CHECK(idr_is_empty(&idr));
}

TEST(define_idr_is_usable)
{
	CHECK(idr_is_empty(&static_idr));
	CHECK_EQ(idr_alloc(&static_idr, P(1), 0, 0, IDR_GFP_KERNEL), 0);
	CHECK(idr_find(&static_idr, 0) == P(1));
	idr_destroy(&static_idr);
	CHECK(idr_is_empty(&static_idr));
}

/* Each static initializer gives the state its init call gives, a negative
 * base and unknown flag bits included (before 0.5.3, IDR_INIT_BASE(x, -1)
 * stored a base of UINT_MAX, and no idr_alloc() could succeed). */
static void check_same_state(const struct idr *a, const struct idr *b)
{
	CHECK_EQ(a->idr_base, b->idr_base);
	CHECK_EQ(a->idr_flags, b->idr_flags);
	CHECK_EQ(a->idr_next, b->idr_next);
	CHECK(a->idr_root == b->idr_root && a->idr_dir == b->idr_dir);
}

TEST(static_initializers_match_the_init_calls)
{
	struct idr plain = IDR_INIT(plain), by_call;
	struct idr below = IDR_INIT_BASE(below, -1);
	struct idr from_7 = IDR_INIT_BASE(from_7, 7);
	struct idr odd = IDR_INIT_FLAGS(odd, -3, IDR_F_NO_RCU | 0x80u);

	idr_init(&by_call);
	check_same_state(&plain, &by_call);
	idr_init_base(&by_call, -1);
	check_same_state(&below, &by_call);
	idr_init_base(&by_call, 7);
	check_same_state(&from_7, &by_call);
	idr_init_flags(&by_call, -3, IDR_F_NO_RCU | 0x80u);
	check_same_state(&odd, &by_call);
	CHECK_EQ(odd.idr_flags, IDR_F_NO_RCU);

	CHECK_EQ(idr_alloc(&below, P(1), 0, 0, IDR_GFP_KERNEL), 0);
	CHECK_EQ(idr_alloc(&from_7, P(1), 0, 0, IDR_GFP_KERNEL), 7);
	CHECK_EQ(idr_alloc(&odd, P(1), 0, 0, IDR_GFP_KERNEL), 0);
	idr_destroy(&below);
	idr_destroy(&from_7);
	idr_destroy(&odd);
}

/* IDR_INIT() is all zeros, so a calloc()ed idr needs no idr_init(). */
TEST(zero_filled_idr_is_an_empty_idr)
{
	static const struct idr zeros, init = IDR_INIT(init); /* static: padding 0 */
	struct idr *heap = calloc(1, sizeof(*heap));

	CHECK(memcmp(&init, &zeros, sizeof(zeros)) == 0);
	CHECK(heap != NULL);
	CHECK(idr_is_empty(heap));
	CHECK_EQ(idr_alloc(heap, P(1), 0, 0, IDR_GFP_KERNEL), 0);
	CHECK(idr_find(heap, 0) == P(1));
	idr_destroy(heap);
	free(heap);
}

/* A calloc()ed ida is an empty ida too (since 0.5.4), though not
 * IDA_INIT()'s bytes, and like it frees its nodes at once: nothing reads an
 * ida's tree outside its lock, so they wait for no grace period. */
TEST(zero_filled_ida_is_an_empty_ida)
{
	struct ida *heap = calloc(1, sizeof(*heap));

	CHECK(heap != NULL);
	CHECK(ida_is_empty(heap));
	CHECK_EQ(ida_find_first(heap), -ENOENT);
	idr_preload_drain();
	long live = tu_live();
	CHECK_EQ(ida_alloc(heap, IDR_GFP_KERNEL), 0);
	CHECK_EQ(tu_live() - live, 2); /* a leaf and a bitmap */
	/* The first ID of the second leaf: a new root, a leaf, a bitmap. */
	CHECK_EQ(ida_alloc_min(heap, 65536, IDR_GFP_KERNEL), 65536);
	CHECK_EQ(tu_live() - live, 5);
	ida_free(heap, 65536);
	CHECK_EQ(tu_live() - live, 2); /* no grace period needed */
	CHECK_EQ(ida_check(heap), 0);
	CHECK_EQ(ida_alloc(heap, IDR_GFP_KERNEL), 1);
	ida_destroy(heap);
	CHECK_EQ(tu_live(), live);
	CHECK(ida_is_empty(heap));
	free(heap);
}

TEST(alloc_hands_out_lowest_free)
{
	struct idr idr;

	idr_init(&idr);
	for (int i = 0; i < 200; i++)
		CHECK_EQ(idr_alloc(&idr, P(i % 64), 0, 0, IDR_GFP_KERNEL), i);
	CHECK(idr_remove(&idr, 70) == P(70 % 64));
	CHECK(idr_remove(&idr, 5) == P(5));
	CHECK_EQ(idr_alloc(&idr, P(1), 0, 0, IDR_GFP_KERNEL), 5);
	CHECK_EQ(idr_alloc(&idr, P(1), 0, 0, IDR_GFP_KERNEL), 70);
	CHECK_EQ(idr_alloc(&idr, P(1), 0, 0, IDR_GFP_KERNEL), 200);
	CHECK_EQ(idr_alloc(&idr, P(1), 150, 0, IDR_GFP_KERNEL), 201);
	idr_destroy(&idr);
}

TEST(alloc_respects_range)
{
	struct idr idr;

	idr_init(&idr);
	CHECK_EQ(idr_alloc(&idr, P(0), 10, 12, IDR_GFP_KERNEL), 10);
	CHECK_EQ(idr_alloc(&idr, P(0), 10, 12, IDR_GFP_KERNEL), 11);
	CHECK_EQ(idr_alloc(&idr, P(0), 10, 12, IDR_GFP_KERNEL), -ENOSPC);
	CHECK_EQ(idr_alloc(&idr, P(0), 0, 1, IDR_GFP_KERNEL), 0);
	CHECK_EQ(idr_alloc(&idr, P(0), 0, 1, IDR_GFP_KERNEL), -ENOSPC);
	CHECK_EQ(idr_alloc(&idr, P(0), 5, 0, IDR_GFP_KERNEL), 5);
	CHECK_EQ(idr_alloc(&idr, P(0), 5, -7, IDR_GFP_KERNEL), 6);
	idr_destroy(&idr);
}

TEST(alloc_bad_ranges_have_defined_errors)
{
	struct idr idr;
	long before = tu_calls();

	idr_init(&idr);
	CHECK_EQ(idr_alloc(&idr, P(0), -1, 0, IDR_GFP_KERNEL), -EINVAL);
	CHECK_EQ(idr_alloc(&idr, P(0), INT_MIN, 10, IDR_GFP_KERNEL), -EINVAL);
	CHECK_EQ(idr_alloc(&idr, P(0), 10, 10, IDR_GFP_KERNEL), -ENOSPC);
	CHECK_EQ(idr_alloc(&idr, P(0), 11, 10, IDR_GFP_KERNEL), -ENOSPC);
	CHECK_EQ(idr_alloc_cyclic(&idr, P(0), -1, 0, IDR_GFP_KERNEL), -EINVAL);
	CHECK_EQ(tu_calls(), before); /* rejected before any allocation */
	CHECK(idr_is_empty(&idr));
}

TEST(alloc_reaches_int_max_and_no_further)
{
	struct idr idr;

	idr_init(&idr);
	CHECK_EQ(idr_alloc(&idr, P(1), INT_MAX, 0, IDR_GFP_KERNEL), INT_MAX);
	CHECK(idr_find(&idr, INT_MAX) == P(1));
	CHECK_EQ(idr_alloc(&idr, P(2), INT_MAX, 0, IDR_GFP_KERNEL), -ENOSPC);
	CHECK_EQ(idr_alloc(&idr, P(2), INT_MAX - 1, 0, IDR_GFP_KERNEL), INT_MAX - 1);
	CHECK_EQ(idr_alloc(&idr, P(3), 0, 0, IDR_GFP_KERNEL), 0);
	CHECK(idr_find(&idr, (unsigned long)INT_MAX + 1) == NULL);
	CHECK(idr_remove(&idr, INT_MAX) == P(1));
	CHECK(idr_remove(&idr, INT_MAX - 1) == P(2));
	CHECK(idr_remove(&idr, 0) == P(3));
	CHECK(idr_is_empty(&idr));
	CHECK_EQ(idr_memory_usage(&idr), 0);
}

TEST(base_shifts_the_id_space)
{
	struct idr idr;
	int id = 0;

	idr_init_base(&idr, 1);
	CHECK_EQ(idr_alloc(&idr, P(1), 0, 0, IDR_GFP_KERNEL), 1);
	CHECK_EQ(idr_alloc(&idr, P(2), 0, 0, IDR_GFP_KERNEL), 2);
	CHECK(idr_find(&idr, 0) == NULL);
	CHECK(idr_find(&idr, 1) == P(1));
	CHECK(idr_remove(&idr, 0) == NULL);
	CHECK(idr_replace(&idr, P(3), 0) == IDR_ERR_PTR(-ENOENT));
	CHECK(idr_get_next(&idr, &id) == P(1));
	CHECK_EQ(id, 1);
	CHECK_EQ(idr_alloc(&idr, P(0), 0, 1, IDR_GFP_KERNEL), -ENOSPC);
	CHECK_EQ(idr_alloc(&idr, P(9), INT_MAX, 0, IDR_GFP_KERNEL), INT_MAX);
	CHECK(idr_find(&idr, INT_MAX) == P(9));
	idr_destroy(&idr);

	idr_init_base(&idr, -5); /* negative: treated as 0 */
	CHECK_EQ(idr_alloc(&idr, P(1), 0, 0, IDR_GFP_KERNEL), 0);
	idr_destroy(&idr);
}

TEST(null_reserves_an_id_until_replaced)
{
	struct idr idr;
	int id = 0;

	idr_init(&idr);
	CHECK_EQ(idr_alloc(&idr, NULL, 0, 0, IDR_GFP_KERNEL), 0);
	CHECK(!idr_is_empty(&idr));
	CHECK(idr_find(&idr, 0) == NULL);
	CHECK(idr_get_next(&idr, &id) == NULL); /* iteration skips it */
	CHECK_EQ(idr_alloc(&idr, P(1), 0, 0, IDR_GFP_KERNEL), 1);
	CHECK(idr_replace(&idr, P(2), 0) == NULL);
	CHECK(idr_find(&idr, 0) == P(2));
	CHECK(idr_replace(&idr, NULL, 0) == P(2));
	CHECK(idr_remove(&idr, 0) == NULL);
	CHECK_EQ(idr_alloc(&idr, P(3), 0, 0, IDR_GFP_KERNEL), 0);
	idr_destroy(&idr);
}

TEST(error_pointers_are_exactly_the_top_errno_range)
{
	for (int err = 1; err <= IDR_MAX_ERRNO; err++) {
		CHECK(idr_is_err(IDR_ERR_PTR(-err)));
		CHECK_EQ(idr_ptr_err(IDR_ERR_PTR(-err)), -err);
	}
	CHECK(!idr_is_err(NULL));
	CHECK(!idr_is_err((void *)(uintptr_t)-(IDR_MAX_ERRNO + 1)));
	CHECK(!idr_is_err(&objs[63]));
}

TEST(replace_and_remove)
{
	struct idr idr;

	idr_init(&idr);
	CHECK_EQ(idr_alloc(&idr, P(1), 0, 0, IDR_GFP_KERNEL), 0);
	void *old = idr_replace(&idr, P(2), 0);
	CHECK(!idr_is_err(old));
	CHECK(old == P(1));
	CHECK(idr_find(&idr, 0) == P(2));
	void *err = idr_replace(&idr, P(3), 1);
	CHECK(idr_is_err(err));
	CHECK_EQ(idr_ptr_err(err), -ENOENT);
	CHECK(idr_replace(&idr, P(3), 64) == IDR_ERR_PTR(-ENOENT));
	CHECK(idr_replace(&idr, P(3), ~0UL) == IDR_ERR_PTR(-ENOENT));
	CHECK(idr_remove(&idr, 1) == NULL);
	CHECK(idr_remove(&idr, ~0UL) == NULL);
	if (TU_WIDE_ULONG)
		CHECK(idr_remove(&idr, (unsigned long)UINT64_C(0x100000000)) == NULL);
	CHECK(idr_find(&idr, 0) == P(2)); /* failed calls changed nothing */
	CHECK(idr_remove(&idr, 0) == P(2));
	CHECK(idr_remove(&idr, 0) == NULL);
	CHECK(idr_is_empty(&idr));
}

struct seen {
	int ids[16];
	void *ptrs[16];
	int n, stop_at;
};

static int record(int id, void *p, void *data)
{
	struct seen *s = data;

	s->ids[s->n] = id;
	s->ptrs[s->n++] = p;
	return s->n == s->stop_at ? 42 : 0;
}

TEST(iteration_visits_non_null_in_order)
{
	struct idr idr;
	struct seen s = { .n = 0 };
	static const int want[] = { 3, 64, 4096, 262144, INT_MAX };

	idr_init(&idr);
	for (int i = 4; i >= 0; i--)
		CHECK_EQ(idr_alloc(&idr, P(i), want[i], 0, IDR_GFP_KERNEL), want[i]);
	CHECK_EQ(idr_alloc(&idr, NULL, 0, 0, IDR_GFP_KERNEL), 0);
	uint32_t big = (uint32_t)INT_MAX + 1;
	CHECK_EQ(idr_alloc_u32(&idr, P(9), &big, UINT32_MAX, IDR_GFP_KERNEL), 0);

	CHECK_EQ(idr_for_each(&idr, record, &s), 0);
	CHECK_EQ(s.n, 5);
	for (int i = 0; i < 5; i++) {
		CHECK_EQ(s.ids[i], want[i]);
		CHECK(s.ptrs[i] == P(i));
	}

	s.n = 0;
	s.stop_at = 2;
	CHECK_EQ(idr_for_each(&idr, record, &s), 42);
	CHECK_EQ(s.n, 2);

	int id = 65;
	CHECK(idr_get_next(&idr, &id) == P(2));
	CHECK_EQ(id, 4096);
	id = INT_MAX;
	CHECK(idr_get_next(&idr, &id) == P(4));
	id = -1;
	CHECK(idr_get_next(&idr, &id) == NULL);
	CHECK_EQ(id, -1);

	void *entry;
	int n = 0;
	idr_for_each_entry(&idr, entry, id) {
		CHECK_EQ(id, want[n]);
		CHECK(entry == P(n));
		n++;
	}
	CHECK_EQ(n, 5);
	idr_destroy(&idr);
}

TEST(destroy_frees_nodes_not_pointers_and_idr_is_reusable)
{
	struct idr idr;
	int *obj = malloc(sizeof(*obj));

	idr_init(&idr);
	CHECK_EQ(idr_alloc(&idr, obj, 0, 0, IDR_GFP_KERNEL), 0);
	CHECK_EQ(idr_alloc(&idr, P(1), 1 << 30, 0, IDR_GFP_KERNEL), 1 << 30);
	idr_set_cursor(&idr, 77);
	idr_destroy(&idr);
	CHECK(idr_is_empty(&idr));
	CHECK_EQ(idr_memory_usage(&idr), 0);
	CHECK_EQ(idr_get_cursor(&idr), 0);
	CHECK(idr_find(&idr, 0) == NULL);
	*obj = 5; /* still ours */
	free(obj);
	CHECK_EQ(idr_alloc(&idr, P(1), 0, 0, IDR_GFP_KERNEL), 0);
	idr_destroy(&idr);
	idr_destroy(&idr); /* destroying an empty idr is harmless */
}

TEST(tree_grows_and_shrinks_with_ids)
{
	struct idr idr;
	size_t node;

	idr_init(&idr);
	CHECK_EQ(idr_alloc(&idr, P(1), 0, 0, IDR_GFP_KERNEL), 0);
	node = idr_memory_usage(&idr);
	CHECK(node > 0);
	CHECK_EQ(idr_alloc(&idr, P(2), 63, 0, IDR_GFP_KERNEL), 63);
	CHECK_EQ(idr_memory_usage(&idr), node); /* same leaf */
	CHECK_EQ(idr_alloc(&idr, P(3), 64, 0, IDR_GFP_KERNEL), 64);
	CHECK_EQ(idr_memory_usage(&idr), 3 * node); /* new root + leaf */
	CHECK_EQ(idr_alloc(&idr, P(4), INT_MAX, 0, IDR_GFP_KERNEL), INT_MAX);
	/* 6 levels: 4 new on top, 4 on the path to INT_MAX, whose lone
	 * entry sits in its parent's slot (a singleton): no leaf.  (On a
	 * 32-bit host, a compact leaf: more than nothing, less than a node.) */
	size_t lone = idr_memory_usage(&idr) - 11 * node;
	CHECK(TU_SINGLETONS ? lone == 0 : lone > 0 && lone < node / 8);
	CHECK(idr_find(&idr, 64) == P(3));
	CHECK(idr_remove(&idr, INT_MAX) == P(4));
	CHECK_EQ(idr_memory_usage(&idr), 3 * node);
	CHECK(idr_remove(&idr, 64) == P(3));
	CHECK_EQ(idr_memory_usage(&idr), node);
	CHECK(idr_find(&idr, 63) == P(2));
	CHECK(idr_remove(&idr, 0) == P(1));
	CHECK(idr_remove(&idr, 63) == P(2));
	CHECK_EQ(idr_memory_usage(&idr), 0);
	CHECK(idr_is_empty(&idr));
}

TEST(u32_ids_above_int_max)
{
	struct idr idr;
	uint32_t id = UINT32_MAX;
	int next = 0;

	idr_init(&idr);
	CHECK_EQ(idr_alloc_u32(&idr, P(1), &id, UINT32_MAX, IDR_GFP_KERNEL), 0);
	CHECK_EQ(id, UINT32_MAX);
	CHECK(idr_find(&idr, UINT32_MAX) == P(1));
	CHECK(idr_find(&idr, (unsigned long)UINT32_MAX + 1) == NULL);
	CHECK_EQ(idr_alloc_u32(&idr, P(2), &id, UINT32_MAX, IDR_GFP_KERNEL), -ENOSPC);
	CHECK_EQ(id, UINT32_MAX); /* unchanged on error */
	id = 10;
	CHECK_EQ(idr_alloc_u32(&idr, P(2), &id, 5, IDR_GFP_KERNEL), -ENOSPC);
	CHECK_EQ(id, 10);
	CHECK(idr_get_next(&idr, &next) == NULL); /* stops before INT_MAX + 1 */
	CHECK(idr_replace(&idr, P(3), UINT32_MAX) == P(1));
	CHECK(idr_remove(&idr, UINT32_MAX) == P(3));
	CHECK(idr_is_empty(&idr));

	idr_init_base(&idr, 1);
	id = 0;
	CHECK_EQ(idr_alloc_u32(&idr, P(1), &id, UINT32_MAX, IDR_GFP_KERNEL), 0);
	CHECK_EQ(id, 1);
	id = UINT32_MAX;
	CHECK_EQ(idr_alloc_u32(&idr, P(2), &id, UINT32_MAX, IDR_GFP_KERNEL), 0);
	CHECK(idr_find(&idr, UINT32_MAX) == P(2));
	id = 0;
	CHECK_EQ(idr_alloc_u32(&idr, P(2), &id, 0, IDR_GFP_KERNEL), -ENOSPC);
	idr_destroy(&idr);
}

/* Entries at @ids[0..n) (allocated with idr_alloc_u32() when above
 * INT_MAX), P(i) under ids[i], plus a NULL reservation at ID @reserved. */
static bool fill_u32(struct idr *idr, const uint32_t *ids, int n, uint32_t reserved)
{
	uint32_t r = reserved;

	if (idr_alloc_u32(idr, NULL, &r, reserved, IDR_GFP_KERNEL) || r != reserved)
		return false;
	for (int i = 0; i < n; i++) {
		uint32_t id = ids[i];
		if (idr_alloc_u32(idr, P(i), &id, ids[i], IDR_GFP_KERNEL) || id != ids[i])
			return false;
	}
	return true;
}

static const uint32_t wide_ids[] = {
	5, 4095, INT_MAX, (uint32_t)INT_MAX + 1, UINT32_MAX - 64, UINT32_MAX - 1, UINT32_MAX,
};
#define WIDE (int)(sizeof(wide_ids) / sizeof(wide_ids[0]))

TEST(get_next_ul_reaches_ids_above_int_max)
{
	struct idr idr;

	idr_init(&idr);
	CHECK(fill_u32(&idr, wide_ids, WIDE, 6));
	for (int i = 0; i < WIDE; i++) {
		/* from just past the one before, and from the ID itself */
		unsigned long id = i ? (unsigned long)wide_ids[i - 1] + 1 : 0;
		CHECK(idr_get_next_ul(&idr, &id) == P(i));
		CHECK_EQ(id, wide_ids[i]);
		CHECK(idr_get_next_ul(&idr, &id) == P(i));
		CHECK_EQ(id, wide_ids[i]);
	}
	/* idr_get_next() still stops at INT_MAX */
	int iid = INT_MAX;
	CHECK(idr_get_next(&idr, &iid) == P(2));
	idr_destroy(&idr);
}

TEST(get_next_ul_leaves_nextid_when_there_is_none)
{
	struct idr idr;
	unsigned long id = 7;

	idr_init(&idr);
	CHECK(idr_get_next_ul(&idr, &id) == NULL); /* empty */
	CHECK_EQ(id, 7);
	CHECK(fill_u32(&idr, wide_ids, WIDE - 1, 6)); /* all but UINT32_MAX */
	id = UINT32_MAX;
	CHECK(idr_get_next_ul(&idr, &id) == NULL);
	CHECK_EQ(id, UINT32_MAX);
	if (TU_WIDE_ULONG) {
		id = (unsigned long)UINT64_C(0x100000000);
		CHECK(idr_get_next_ul(&idr, &id) == NULL);
		CHECK(id == (unsigned long)UINT64_C(0x100000000));
	}
	id = 6; /* the reservation is skipped */
	CHECK(idr_get_next_ul(&idr, &id) == P(1));
	CHECK_EQ(id, 4095);
	idr_destroy(&idr);
}

TEST(for_each_entry_ul_visits_every_entry_once_and_ends)
{
	struct idr idr;
	unsigned long id, tmp;
	void *entry;
	int n = 0;

	idr_init(&idr);
	CHECK(fill_u32(&idr, wide_ids, WIDE, 6));
	idr_for_each_entry_ul(&idr, entry, tmp, id) {
		CHECK(n < WIDE);
		CHECK_EQ(id, wide_ids[n]);
		CHECK(entry == P(n));
		n++;
	}
	CHECK_EQ(n, WIDE);
	idr_destroy(&idr);

	/* From a base, and over a dense run the lookup directory serves. */
	idr_init_base(&idr, 100);
	for (int i = 0; i < 5000; i++)
		CHECK_EQ(idr_alloc(&idr, P(i % 64), 0, 0, IDR_GFP_KERNEL), 100 + i);
	uint32_t top = UINT32_MAX;
	CHECK_EQ(idr_alloc_u32(&idr, P(63), &top, UINT32_MAX, IDR_GFP_KERNEL), 0);
	n = 0;
	idr_for_each_entry_ul(&idr, entry, tmp, id) {
		CHECK_EQ(id, n < 5000 ? 100 + (unsigned long)n : UINT32_MAX);
		CHECK(entry == P(n < 5000 ? n % 64 : 63));
		n++;
	}
	CHECK_EQ(n, 5001);
	idr_destroy(&idr);
}

TEST(for_each_entry_continue_resumes_at_id)
{
	struct idr idr;
	void *entry;
	int id, n = 0;
	unsigned long uid, tmp;

	idr_init(&idr);
	CHECK(fill_u32(&idr, wide_ids, WIDE, 6));
	idr_for_each_entry(&idr, entry, id)
		if (id == 4095)
			break;
	CHECK_EQ(id, 4095);
	idr_for_each_entry_continue(&idr, entry, id) { /* 4095 again, then INT_MAX */
		CHECK_EQ(id, wide_ids[1 + n]);
		n++;
	}
	CHECK_EQ(n, 2);
	id = -1;
	idr_for_each_entry_continue(&idr, entry, id)
		n++;
	CHECK_EQ(n, 2); /* from a negative ID: nothing */

	n = 0;
	uid = (unsigned long)INT_MAX + 1;
	idr_for_each_entry_continue_ul(&idr, entry, tmp, uid) {
		CHECK_EQ(uid, wide_ids[3 + n]);
		CHECK(entry == P(3 + n));
		n++;
	}
	CHECK_EQ(n, WIDE - 3);
	idr_destroy(&idr);
}

TEST(cyclic_continues_after_last_and_wraps)
{
	struct idr idr;

	idr_init(&idr);
	CHECK_EQ(idr_alloc_cyclic(&idr, P(0), 0, 4, IDR_GFP_KERNEL), 0);
	CHECK_EQ(idr_alloc_cyclic(&idr, P(1), 0, 4, IDR_GFP_KERNEL), 1);
	CHECK_EQ(idr_get_cursor(&idr), 2);
	CHECK(idr_remove(&idr, 0) == P(0));
	CHECK_EQ(idr_alloc_cyclic(&idr, P(2), 0, 4, IDR_GFP_KERNEL), 2);
	CHECK_EQ(idr_alloc_cyclic(&idr, P(3), 0, 4, IDR_GFP_KERNEL), 3);
	CHECK_EQ(idr_alloc_cyclic(&idr, P(4), 0, 4, IDR_GFP_KERNEL), 0); /* wrap */
	CHECK_EQ(idr_alloc_cyclic(&idr, P(5), 0, 4, IDR_GFP_KERNEL), -ENOSPC);
	CHECK_EQ(idr_get_cursor(&idr), 1);
	idr_set_cursor(&idr, 100);
	CHECK(idr_remove(&idr, 2) == P(2));
	CHECK_EQ(idr_alloc_cyclic(&idr, P(6), 0, 4, IDR_GFP_KERNEL), 2);
	CHECK_EQ(idr_alloc_cyclic(&idr, P(7), 10, 0, IDR_GFP_KERNEL), 10);
	idr_set_cursor(&idr, INT_MAX);
	CHECK_EQ(idr_alloc_cyclic(&idr, P(8), 10, 0, IDR_GFP_KERNEL), INT_MAX);
	CHECK_EQ(idr_get_cursor(&idr), (unsigned)INT_MAX + 1);
	CHECK_EQ(idr_alloc_cyclic(&idr, P(9), 10, 0, IDR_GFP_KERNEL), 11);
	CHECK_EQ(idr_alloc_cyclic(&idr, P(9), 5, 6, IDR_GFP_KERNEL), 5);
	CHECK_EQ(idr_alloc_cyclic(&idr, P(9), 5, 5, IDR_GFP_KERNEL), -ENOSPC);
	idr_destroy(&idr);
}

TEST(nowait_after_preload_never_calls_allocator)
{
	struct idr idr;

	idr_init(&idr);
	idr_preload(IDR_GFP_KERNEL);
	long calls = tu_calls();
	tu_fail_thread(true);
	/* the worst case: a height-1 tree growing to reach the top leaf, at
	 * its offset 0, so that the new leaf is a full one */
	CHECK_EQ(idr_alloc(&idr, P(0), 0, 0, IDR_GFP_NOWAIT), 0);
	size_t node = idr_memory_usage(&idr);
	idr_preload_end();
	idr_preload(IDR_GFP_KERNEL); /* refills nothing: allocator fails */
	uint32_t id = UINT32_MAX - 63;
	tu_fail_thread(false);
	idr_preload_end();
	idr_preload(IDR_GFP_KERNEL);
	tu_fail_thread(true);
	calls = tu_calls();
	CHECK_EQ(idr_alloc_u32(&idr, P(1), &id, UINT32_MAX, IDR_GFP_NOWAIT), 0);
	CHECK_EQ(id, UINT32_MAX - 63);
	CHECK_EQ(tu_calls(), calls);
	tu_fail_thread(false);
	idr_preload_end();
	CHECK_EQ(idr_memory_usage(&idr), 11 * node); /* all 10 stash nodes used */
	idr_destroy(&idr);
}

TEST(nowait_without_preload_fails_cleanly)
{
	struct idr idr;

	idr_init(&idr);
	idr_preload_drain();
	tu_fail_thread(true);
	CHECK_EQ(idr_alloc(&idr, P(0), 0, 0, IDR_GFP_NOWAIT), -ENOMEM);
	CHECK_EQ(idr_alloc(&idr, P(0), 0, 0, IDR_GFP_ATOMIC), -ENOMEM);
	CHECK_EQ(idr_alloc(&idr, P(0), 0, 0, IDR_GFP_KERNEL), -ENOMEM);
	tu_fail_thread(false);
	CHECK(idr_is_empty(&idr));
	CHECK_EQ(idr_memory_usage(&idr), 0);
}

TEST(preload_never_fails_even_when_allocator_does)
{
	struct idr idr;

	idr_init(&idr);
	idr_preload_drain();
	tu_fail_from(4); /* three nodes, then nothing */
	idr_preload(IDR_GFP_KERNEL);
	CHECK_EQ(idr_alloc(&idr, P(0), 0, 0, IDR_GFP_NOWAIT), 0); /* 1 node */
	CHECK_EQ(idr_alloc(&idr, P(1), 64, 0, IDR_GFP_NOWAIT), 64); /* 2: root, leaf */
	CHECK_EQ(idr_alloc(&idr, P(1), 1 << 20, 0, IDR_GFP_NOWAIT), -ENOMEM);
	idr_preload_end();
	tu_fail_from(0);
	CHECK(idr_find(&idr, 64) == P(1));
	idr_destroy(&idr);
}

TEST(unmatched_preload_end_is_reported)
{
	idr_preload(IDR_GFP_KERNEL);
	idr_preload_end();
	CHECK_EQ(tu_diag_count(), 0);
	idr_preload_end();
	CHECK_EQ(tu_diag_count(), 1);
	CHECK(strstr(tu_diag_last(), "idr_preload_end") != NULL);
	/* nesting is allowed */
	idr_preload(IDR_GFP_KERNEL);
	idr_preload(IDR_GFP_KERNEL);
	idr_preload_end();
	idr_preload_end();
	CHECK_EQ(tu_diag_count(), 1);
}

/* idr.h's inline idr_preload()/idr_preload_end() and idr_lock()/idr_unlock()
 * and the library's functions of those names (what programs built with
 * IDR_NO_INLINE or an older header call) keep one state between them. */
TEST(inline_and_library_fast_paths_share_their_state)
{
	struct idr idr;

	idr_init(&idr);
	tu_library_preload(IDR_GFP_KERNEL); /* stocks the stash */
	idr_preload(IDR_GFP_KERNEL);        /* nests */
	tu_fail_thread(true);
	long calls = tu_calls();
	CHECK_EQ(idr_alloc(&idr, P(0), 0, 0, IDR_GFP_NOWAIT), 0);
	CHECK_EQ(tu_calls(), calls); /* the library's preload filled it */
	tu_fail_thread(false);
	tu_library_preload_end();
	idr_preload_end();
	CHECK_EQ(tu_diag_count(), 0);
	tu_library_preload_end(); /* unmatched: each side sees the depth 0 */
	idr_preload_end();
	CHECK_EQ(tu_diag_count(), 2);
	CHECK(strstr(tu_diag_last(), "idr_preload_end") != NULL);

	idr_lock(&idr); /* biased to this thread from here on */
	CHECK(idr.idr_lock_owner != NULL);
	CHECK_EQ(idr.idr_lock_busy, 1);
	tu_library_unlock(&idr);
	CHECK_EQ(idr.idr_lock_busy, 0);
	tu_library_lock(&idr);
	CHECK_EQ(idr.idr_lock_busy, 1);
	idr_unlock(&idr);
	CHECK_EQ(idr.idr_lock_busy, 0);
	CHECK_EQ(idr.idr_lock_word, 0);
	idr_destroy(&idr);
}

/* With no hooks set, nodes come from malloc() and go back to free(), and a
 * diagnostic goes to stderr as "libidr: <function>: <message>". */
TEST(the_default_allocator_and_diagnostic_work)
{
	struct idr idr;
	char text[256] = "";

	idr_set_allocator(NULL);
	idr_set_diagnostic(NULL, NULL);
	long live = tu_live();
	idr_init(&idr);
	for (int i = 0; i < 5000; i++)
		CHECK_EQ(idr_alloc(&idr, P(i % 64), 0, 0, IDR_GFP_KERNEL), i);
	CHECK(idr_find(&idr, 4321) == P(4321 % 64));
	CHECK(idr_memory_usage(&idr) > 5000 * sizeof(void *));
	idr_destroy(&idr);
	idr_rcu_barrier();
	idr_preload_drain(); /* every block back to malloc's own free() */

	FILE *f = tmpfile();
	int saved = dup(2);
	CHECK(f && saved >= 0);
	fflush(stderr);
	dup2(fileno(f), 2);
	idr_preload_end(); /* unmatched */
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	size_t got = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	tu_restore_hooks();
	text[got] = 0;
	CHECK(strncmp(text, "libidr: idr_preload_end: ", 25) == 0);
	CHECK_EQ(tu_live(), live); /* the counting allocator saw none of it */
}

/* An allocator whose blocks sit sizeof(void *) past malloc's, so aligned
 * less than the 2 * sizeof(void *) the contract asks, while misalign is
 * set; it counts what it hands out and gets back. */
static struct {
	bool misalign;
	long given, misaligned, returned;
} skew;

static void *skew_alloc(size_t size, void *ctx)
{
	size_t off = skew.misalign ? sizeof(void *) : 2 * sizeof(void *);
	char *b = malloc(size + off);

	(void)ctx;
	if (!b)
		return NULL;
	skew.given++;
	skew.misaligned += skew.misalign;
	return b + off;
}

static void skew_free(void *p, size_t size, void *ctx)
{
	/* malloc() aligns to 2 * sizeof(void *): the offset shows in p. */
	size_t off = ((uintptr_t)p & (2 * sizeof(void *) - 1)) ? sizeof(void *)
								 : 2 * sizeof(void *);
	char *b = (char *)p - off;

	(void)size;
	(void)ctx;
	skew.returned++;
	free(b);
}

/* Every misaligned block goes straight back and its call fails with
 * -ENOMEM, leaving the idr as it was; well-aligned blocks work again. */
TEST(blocks_aligned_less_than_the_contract_fail_cleanly)
{
	static const struct idr_allocator a = { skew_alloc, skew_free, NULL };
	struct idr idr;
	struct ida ida;

	memset(&skew, 0, sizeof(skew));
	idr_set_allocator(&a);
	idr_init(&idr);
	ida_init(&ida);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(idr_alloc(&idr, P(i), 0, 0, IDR_GFP_KERNEL), i);
	size_t held = idr_memory_usage(&idr);

	skew.misalign = true;
	CHECK_EQ(idr_alloc(&idr, P(0), 0, 0, IDR_GFP_KERNEL), -ENOMEM);
	CHECK_EQ(idr_alloc(&idr, P(0), 1000, 0, IDR_GFP_KERNEL), -ENOMEM);
	idr_preload(IDR_GFP_KERNEL); /* never fails, stocks nothing */
	CHECK_EQ(idr_alloc(&idr, P(0), 0, 0, IDR_GFP_NOWAIT), -ENOMEM);
	idr_preload_end();
	CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), -ENOMEM);
	CHECK(skew.misaligned > 0);
	CHECK_EQ(skew.returned, skew.misaligned); /* none kept */
	CHECK_EQ(idr_memory_usage(&idr), held);
	CHECK(idr_find(&idr, 63) == P(63) && !idr_find(&idr, 64));
	CHECK(ida_is_empty(&ida));

	skew.misalign = false;
	CHECK_EQ(idr_alloc(&idr, P(0), 0, 0, IDR_GFP_KERNEL), 64);
	CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), 0);
	idr_destroy(&idr);
	ida_destroy(&ida);
	idr_rcu_barrier();
	idr_preload_drain();
	tu_restore_hooks();
	CHECK_EQ(skew.returned, skew.given);
}

static void *preload_and_exit(void *arg)
{
	struct idr *idr = arg;

	idr_preload(IDR_GFP_KERNEL);
	idr_lock(idr);
	int id = idr_alloc(idr, P(1), 0, 0, IDR_GFP_NOWAIT);
	idr_unlock(idr);
	idr_preload_end();
	return (void *)(intptr_t)id;
}

static void *exit_inside_preload(void *arg)
{
	(void)arg;
	idr_preload(IDR_GFP_KERNEL);
	return NULL;
}

TEST(thread_exit_frees_its_stash)
{
	struct idr idr;
	pthread_t t;
	void *ret;

	idr_init(&idr);
	long live = tu_settled_live();
	CHECK_EQ(pthread_create(&t, NULL, preload_and_exit, &idr), 0);
	CHECK_EQ(pthread_join(t, &ret), 0);
	CHECK_EQ((intptr_t)ret, 0);
	/* only the one leaf remains: the thread's 9 spare nodes are gone */
	CHECK_EQ(tu_live() - live, 1);
	idr_destroy(&idr);

	CHECK_EQ(pthread_create(&t, NULL, exit_inside_preload, NULL), 0);
	CHECK_EQ(pthread_join(t, &ret), 0);
	CHECK_EQ(tu_diag_count(), 1);
	CHECK(strstr(tu_diag_last(), "preload section") != NULL);
}

/* The child's half of the test below: a process whose thread-specific
 * data keys are all taken before its first idr_preload(). */
static void preload_with_no_key_left(void)
{
	struct idr idr;
	pthread_key_t key;
	int keys = 0;

	while (pthread_key_create(&key, NULL) == 0)
		keys++;
	idr_init_flags(&idr, 0, IDR_F_NO_RCU);
	for (int i = 0; i < 3; i++) {
		idr_preload(IDR_GFP_KERNEL);
		int id = idr_alloc(&idr, P(i), 0, 0, IDR_GFP_NOWAIT);
		idr_preload_end();
		CHECK_EQ(id, i);
	}
	CHECK(keys > 0);
	CHECK_EQ(tu_diag_count(), 1); /* said once */
	CHECK(strstr(tu_diag_last(), "PTHREAD_KEYS_MAX") != NULL);
	idr_destroy(&idr);
	idr_preload_drain();
}

/* idr_preload() never fails, not even in a process with no thread-specific
 * data key left for the cleanup of its threads' stashes: it reports that
 * once and goes on.  libidr makes its key once per process, so the test
 * runs in a fresh copy of this program: its path from /proc/self/exe,
 * which valgrind answers with the program's (the copy runs without it),
 * but not under qemu-user, whose copy would be run by the host. */
TEST(preload_works_with_no_thread_key_left)
{
	char self[4096];
	ssize_t len;

	if (getenv("IDR_TEST_NO_KEY_CHILD")) {
		preload_with_no_key_left();
		return;
	}
	if (getenv("IDR_TEST_EMULATED"))
		return;
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(len > 0);
	self[len] = '\0';
	/* Set before the fork, so that the child, a copy of a threaded
	 * process, calls only async-signal-safe functions before its exec. */
	CHECK_EQ(setenv("IDR_TEST_NO_KEY_CHILD", "1", 1), 0);
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull < 0 || dup2(devnull, STDOUT_FILENO) < 0)
			tu_child_exit(126);
		execl(self, "api-idr", "preload_works_with_no_thread_key_left", (char *)NULL);
		tu_child_exit(127);
	}
	unsetenv("IDR_TEST_NO_KEY_CHILD");
	CHECK(pid > 0);
	int status;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
}

TEST(no_rcu_idr_frees_at_once)
{
	struct idr idr;

	idr_init_flags(&idr, 0, IDR_F_NO_RCU);
	idr_preload_drain();
	long live = tu_live();
	CHECK_EQ(idr_alloc(&idr, P(1), 1024, 0, IDR_GFP_KERNEL), 1024);
	CHECK_EQ(tu_live() - live, 2); /* root and a full leaf (offset 0) */
	CHECK(idr_remove(&idr, 1024) == P(1));
	CHECK_EQ(tu_live(), live); /* no grace period needed */
	CHECK_EQ(idr_alloc(&idr, P(1), 0, 0, IDR_GFP_KERNEL), 0);
	/* A compact leaf, too, goes at once: IDs 1000 and 1001 need one, and
	 * 1000 alone fits in the new root's slot (on a 32-bit host it takes
	 * the compact leaf itself, so it is the one freed at once below). */
	long before_single = tu_live();
	CHECK_EQ(idr_alloc(&idr, P(2), 1000, 0, IDR_GFP_KERNEL), 1000);
	long single = tu_live();
	CHECK_EQ(single - before_single, 1 + TU_SINGLETON_COMPACTS);
	CHECK_EQ(idr_alloc(&idr, P(3), 1001, 0, IDR_GFP_KERNEL), 1001);
	CHECK_EQ(tu_live() - single, TU_SINGLETONS ? 1 : 0);
	CHECK(idr_remove(&idr, 1001) == P(3));
	CHECK_EQ(tu_live(), single);
	CHECK(idr_find(&idr, 1000) == P(2));
	CHECK_EQ(idr_check(&idr), 0);
	CHECK(idr_remove(&idr, 1000) == P(2));
	CHECK_EQ(tu_live(), before_single);
	idr_destroy(&idr);
	CHECK_EQ(tu_live(), live);
}

TEST(dense_million_then_empty)
{
	struct idr idr;
	long n = tu_scale(1000000);

	idr_init(&idr);
	for (long i = 0; i < n; i++) {
		int id = idr_alloc(&idr, P(i & 63), 0, 0, IDR_GFP_KERNEL);
		if (id != i)
			CHECK_EQ(id, i);
	}
	size_t mem = idr_memory_usage(&idr);
	CHECK(mem > 0);
	CHECK(mem <= (size_t)n * 9); /* 520-byte leaves of 64: ~8.1 bytes/ID */
	for (long i = 0; i < n; i++)
		if (idr_find(&idr, (unsigned long)i) != P(i & 63))
			CHECK(idr_find(&idr, (unsigned long)i) == P(i & 63));
	for (long i = 0; i < n; i++)
		if (idr_remove(&idr, (unsigned long)i) != P(i & 63))
			CHECK(!"remove returned the wrong pointer");
	CHECK_EQ(idr_memory_usage(&idr), 0);
	CHECK(idr_is_empty(&idr));
}
