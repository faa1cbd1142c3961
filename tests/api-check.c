/* SPDX-License-Identifier: MIT */
/*
 * idr_check()/ida_check() must notice each kind of corruption: every test
 * here breaks one invariant by hand (through the private header), expects
 * -EUCLEAN and a diagnostic, then repairs it and expects 0 again.
 */
#include <stdlib.h>
#include <string.h>

#include "../src/internal.h"
#include "testutil.h"

static int obj;

/* An idr with IDs 0..@n-1, so the tree has @n/64 leaves under one root. */
static void fill(struct idr *idr, int n)
{
	idr_init(idr);
	for (int i = 0; i < n; i++)
		if (idr_alloc(idr, &obj, 0, 0, IDR_GFP_KERNEL) != i)
			tu_fail(__FILE__, __LINE__, "fill");
}

static struct idr_node *top(const struct idr *idr)
{
	return root_node(root_load(idr));
}

/* Expect @check to fail with -EUCLEAN and one report that contains @needle;
 * where the needle starts "index I, height H:", the report must say where
 * the corruption is. */
#define EXPECT_REPORTED(check, needle)                                       \
	do {                                                                 \
		int diags = tu_diag_count();                                 \
		CHECK_EQ((check), -EUCLEAN);                                 \
		CHECK_EQ(tu_diag_count(), diags + 1);                        \
		if (!strstr(tu_diag_last(), needle))                         \
			fprintf(stderr, "    diagnostic: %s\n", tu_diag_last()); \
		CHECK(strstr(tu_diag_last(), needle) != NULL);               \
	} while (0)

/* Flip @bits in *@word and expect @check to fail, then flip back. */
#define EXPECT_CAUGHT_BY(check, word, bits, needle)                          \
	do {                                                                 \
		*(word) ^= (bits);                                           \
		EXPECT_REPORTED(check, needle);                              \
		*(word) ^= (bits);                                           \
		CHECK_EQ((check), 0);                                        \
	} while (0)
#define EXPECT_CAUGHT(idr, word, bits, needle)                               \
	EXPECT_CAUGHT_BY(idr_check(idr), word, bits, needle)

TEST(consistent_trees_pass)
{
	struct idr idr;

	idr_init(&idr);
	CHECK_EQ(idr_check(&idr), 0);
	fill(&idr, 5000);
	CHECK_EQ(idr_check(&idr), 0);
	CHECK_EQ(idr_alloc(&idr, NULL, 1 << 30, 0, IDR_GFP_KERNEL), 1 << 30);
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
	CHECK_EQ(tu_diag_count(), 0);
}

TEST(leaf_free_bit_corruption_is_caught)
{
	struct idr idr;

	fill(&idr, 200);
	struct idr_node *leaf = top(&idr)->slots[1];
	/* Caught at the parent, whose bit says the leaf is full. */
	EXPECT_CAUGHT(&idr, &leaf->free, (uint64_t)1 << 7,
		      "index 64, height 2: free bit disagrees with the child");
	/* Leaf 3 (IDs 192..199) has room: an entry marked free is caught there. */
	EXPECT_CAUGHT(&idr, &((struct idr_node *)top(&idr)->slots[3])->free,
		      (uint64_t)1 << 1, "index 193, height 1: entry in a free slot");
	idr_destroy(&idr);
}

TEST(interior_bits_corruption_is_caught)
{
	struct idr idr;

	fill(&idr, 200);
	struct idr_node *root = top(&idr);
	/* Leaf 0 is full: a free bit for it would send searches into it. */
	EXPECT_CAUGHT(&idr, &root->free, (uint64_t)1, "index 0, height 2: free bit disagrees");
	/* Slot 5 is empty: marking it full would hide its IDs from searches. */
	EXPECT_CAUGHT(&idr, &root->free, (uint64_t)1 << 5,
		      "index 320, height 2: free bit disagrees");
	idr_destroy(&idr);
}

TEST(node_count_and_shape_corruption_is_caught)
{
	struct idr idr;

	fill(&idr, 200);
	EXPECT_CAUGHT(&idr, &idr.idr_nodes, (size_t)1, "index 0, height 0: node count");
	/* A root whose only child is its first should have been shrunk. */
	struct idr_node *root = top(&idr);
	void *saved[3] = { root->slots[1], root->slots[2], root->slots[3] };
	uint64_t free = root->free;
	root->slots[1] = root->slots[2] = root->slots[3] = NULL;
	root->free = ~(uint64_t)1;
	EXPECT_REPORTED(idr_check(&idr), "index 0, height 2: root level left unshrunk");
	for (int i = 0; i < 3; i++)
		root->slots[i + 1] = saved[i];
	root->free = free;
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

TEST(entry_in_free_slot_is_caught)
{
	struct idr idr;

	fill(&idr, 10);
	struct idr_node *leaf = top(&idr);
	leaf->slots[20] = &obj;
	EXPECT_REPORTED(idr_check(&idr), "entry in a free slot");
	leaf->slots[20] = NULL;
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

TEST(ida_corruption_is_caught)
{
	struct ida ida;

	ida_init(&ida);
	CHECK_EQ(ida_check(&ida), 0);
	for (int i = 0; i < 3000; i++)
		CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), i);
	CHECK_EQ(ida_check(&ida), 0);
	struct idr_node *leaf = top(&ida.ida_rt);
	uint64_t *bitmap = leaf->slots[0];
	/* Chunk 0 is full; a clear bit in it makes its "full" mark a lie. */
	EXPECT_CAUGHT_BY(ida_check(&ida), &bitmap[3], (uint64_t)1,
			 "index 0, height 1: bitmap's free bit is wrong");
	EXPECT_CAUGHT_BY(ida_check(&ida), &ida.ida_bitmaps, (size_t)1,
			 "index 0, height 0: bitmap count");
	EXPECT_CAUGHT_BY(ida_check(&ida), &ida.ida_rt.idr_nodes, (size_t)1,
			 "index 0, height 0: node count");
	/* Chunk 3 has no bitmap: a full mark would hide its IDs. */
	EXPECT_CAUGHT_BY(ida_check(&ida), &leaf->free, (uint64_t)1 << 3,
			 "absent bitmap marked full");
	/* Chunk 2's bitmap, emptied: it should have been freed. */
	uint64_t *last = leaf->slots[2], saved[IDA_CHUNK_WORDS];
	memcpy(saved, last, sizeof(saved));
	memset(last, 0, sizeof(saved));
	EXPECT_REPORTED(ida_check(&ida), "index 2, height 1: empty bitmap kept");
	memcpy(last, saved, sizeof(saved));
	CHECK_EQ(ida_check(&ida), 0);
	ida_destroy(&ida);
}

TEST(lookup_directory_corruption_is_caught)
{
	struct idr idr;

	fill(&idr, 20000);
	struct leafdir *d = (struct leafdir *)dir_load(&idr);
	CHECK(d != NULL);
	/* An entry that no longer matches its leaf, as a missed update
	 * would leave it. */
	uintptr_t *entry = &d->leaf[100];
	EXPECT_CAUGHT(&idr, entry, (uintptr_t)16, "lookup directory disagrees");
	/* Its bookkeeping: the bound the lookup trusts, and the count the
	 * writer weighs the directory by. */
	EXPECT_CAUGHT(&idr, &d->keyed, (size_t)1, "neither keyed nor a span");
	EXPECT_CAUGHT(&idr, &d->named, (size_t)1, "miscounts its leaves");
	/* A directory left behind on a tree without interior levels. */
	idr_destroy(&idr);
	fill(&idr, 10);
	struct leafdir *stray = malloc(dir_bytes(1));
	stray->cap = stray->keyed = 1;
	stray->first = 0;
	stray->leaf[0] = dir_entry(top(&idr), 0);
	idr.idr_dir = stray->leaf;
	EXPECT_REPORTED(idr_check(&idr), "without interior levels");
	idr.idr_dir = NULL;
	free(stray);
	idr_destroy(&idr);
}

TEST(allocation_hint_corruption_is_caught)
{
	struct idr idr;

	fill(&idr, 1000); /* the hint is the leaf of 960..1023 */
	CHECK(idr.idr_hint != NULL);
	CHECK_EQ(idr_check(&idr), 0);
	EXPECT_CAUGHT(&idr, &idr.idr_hint_base, 64u, "names no leaf");
	/* A hole below a hint that claims there is none. */
	CHECK(idr_remove(&idr, 5) == &obj);
	idr.idr_hint = tree_leaf_word(&idr, 960 >> 6);
	idr.idr_hint_base = 960;
	idr.idr_hint_full = 1;
	EXPECT_REPORTED(idr_check(&idr), "free index below");
	idr.idr_hint_full = 0;
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

TEST(ida_allocation_hint_corruption_is_caught)
{
	struct ida ida;

	ida_init(&ida);
	for (int i = 0; i < 3000; i++)
		CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), i);
	/* The hint is chunk 2 (IDs 2048..3071), bits below 952 set. */
	CHECK(ida.ida_hint != NULL);
	CHECK_EQ(ida.ida_hint_chunk, 2);
	CHECK_EQ(ida.ida_hint_low, 3000 - 2048);
	CHECK_EQ(ida_check(&ida), 0);
	ida.ida_hint_low++;
	EXPECT_REPORTED(ida_check(&ida), "low mark");
	ida.ida_hint_low--;
	ida.ida_hint_chunk = 1;
	EXPECT_REPORTED(ida_check(&ida), "names no bitmap");
	ida.ida_hint_chunk = 2;
	/* A free ID below the hint: it must stop vouching for what is below. */
	ida_free(&ida, 7);
	CHECK_EQ(ida.ida_hint_full, 0);
	CHECK_EQ(ida_check(&ida), 0);
	ida.ida_hint_full = 1;
	EXPECT_REPORTED(ida_check(&ida), "room below");
	ida.ida_hint_full = 0;
	CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), 7);
	CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), 3000);
	CHECK_EQ(ida_check(&ida), 0);
	ida_destroy(&ida);
}

/* A root with a full leaf at slot 1 (ID 64) and, at slot 2, a compact
 * leaf holding IDs 129 (a NULL, which no singleton holds) and 130. */
static struct cleaf *fill_compact(struct idr *idr)
{
	idr_init(idr);
	if (idr_alloc(idr, &obj, 64, 0, IDR_GFP_KERNEL) != 64 ||
	    idr_alloc(idr, NULL, 129, 0, IDR_GFP_KERNEL) != 129 ||
	    idr_alloc(idr, &obj, 130, 0, IDR_GFP_KERNEL) != 130)
		tu_fail(__FILE__, __LINE__, "fill_compact");
	uintptr_t word = (uintptr_t)top(idr)->slots[2];
	if ((word & TAG_MASK) != TAG_COMPACT)
		tu_fail(__FILE__, __LINE__, "no compact leaf at slot 2");
	return (struct cleaf *)(word & ~TAG_MASK);
}

TEST(compact_leaf_corruption_is_caught)
{
	struct idr idr;
	struct cleaf *leaf = fill_compact(&idr);
	CHECK_EQ(idr_check(&idr), 0);
	uint64_t lanes = leaf->lanes;
	unsigned off0 = lanes & 0xff, off1 = (lanes >> 8) & 0xff;

	/* Two lanes holding one offset: a lookup would see only one. */
	EXPECT_CAUGHT(&idr, &leaf->lanes, (uint64_t)(off0 ^ off1) << 8,
		      "index 128, height 1: compact leaf lanes are bad");
	/* A lane past the leaf's capacity: the first such, and the last. */
	EXPECT_CAUGHT(&idr, &leaf->lanes, (uint64_t)(LANE_FREE ^ 7) << (8 * CLEAF_CAP),
		      "lanes are bad");
	EXPECT_CAUGHT(&idr, &leaf->lanes, (uint64_t)(LANE_FREE ^ 7) << 56, "lanes are bad");
	/* An offset beyond the leaf. */
	EXPECT_CAUGHT(&idr, &leaf->lanes, (uint64_t)(off0 ^ 64), "lanes are bad");
	/* No lane in use: the leaf should have gone. */
	EXPECT_CAUGHT(&idr, &leaf->lanes, lanes ^ ~(uint64_t)0, "empty compact leaf");
	/* A sparse leaf is never full, so its parent's bit says it has room. */
	EXPECT_CAUGHT(&idr, &top(&idr)->free, (uint64_t)1 << 2,
		      "index 128, height 2: sparse leaf marked full");
	EXPECT_CAUGHT(&idr, &idr.idr_sparse, (size_t)1, "index 0, height 0: compact leaf count");
	idr_destroy(&idr);
}

TEST(a_sparse_leaf_where_none_may_be_is_caught)
{
	struct idr idr, handles;

	fill_compact(&idr);
	idr_init_flags(&handles, 0, IDR_F_HANDLES);
	for (int i = 0; i <= 64; i++)
		CHECK_EQ(idr_alloc(&handles, &obj, 0, 0, IDR_GFP_KERNEL), i);
	/* The compact leaf's word in a handle idr's empty slot 2: handle
	 * lookups read generations that a compact leaf has not got. */
	void **slot = &top(&handles)->slots[2];
	CHECK_EQ(idr_check(&handles), 0);
	*slot = top(&idr)->slots[2];
	EXPECT_REPORTED(idr_check(&handles), "sparse leaf in a tree that has none");
	*slot = NULL;
	CHECK_EQ(idr_check(&handles), 0);
	idr_destroy(&handles);
	idr_destroy(&idr);
}

TEST(a_generation_missing_from_a_handle_idr_is_caught)
{
	struct idr idr;

	idr_init_flags(&idr, 0, IDR_F_HANDLES);
	for (int i = 0; i < 10; i++)
		CHECK_EQ(idr_alloc(&idr, &obj, 0, 0, IDR_GFP_KERNEL), i);
	uint32_t *gen = &node_gens(top(&idr))[3];
	uint32_t saved = *gen;
	*gen = 0;
	EXPECT_REPORTED(idr_check(&idr), "without a generation");
	*gen = saved;
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

/* Move the root's child at slot @from to slot @to (empty), keeping the
 * root's free bits in step: the subtree now stands for other IDs. */
static void move_child(struct idr_node *root, unsigned from, unsigned to)
{
	uint64_t bit = (root->free >> from) & 1;

	root->slots[to] = root->slots[from];
	root->slots[from] = NULL;
	root->free = (root->free | (uint64_t)1 << from) & ~((uint64_t)!bit << to);
}

/* Entries at the top of the u32 range, moved one root slot further up, now
 * stand for IDs beyond it, which nothing could have allocated. */
TEST(ids_beyond_the_range_are_caught)
{
	unsigned top_slot = UINT32_MAX >> 30; /* the root spans 2^30 a slot */
	/* In a singleton word, and in a full leaf (an ID at offset 0 starts
	 * one). */
	const uint32_t ids[] = { UINT32_MAX, UINT32_MAX - 63 };

	for (int i = 0; i < 2; i++) {
		struct idr idr;
		uint32_t id = ids[i];

		idr_init(&idr);
		CHECK_EQ(idr_alloc(&idr, &obj, 0, 0, IDR_GFP_KERNEL), 0);
		CHECK_EQ(idr_alloc_u32(&idr, &obj, &id, UINT32_MAX, IDR_GFP_KERNEL), 0);
		CHECK_EQ(root_height(root_load(&idr)), MAX_HEIGHT);
		move_child(top(&idr), top_slot, top_slot + 1);
		EXPECT_REPORTED(idr_check(&idr), "ID beyond the ID range");
		move_child(top(&idr), top_slot + 1, top_slot);
		CHECK_EQ(idr_check(&idr), 0);
		idr_destroy(&idr);
	}
}

TEST(tree_shape_corruption_is_caught)
{
	struct idr idr;

	fill(&idr, 200);
	/* A leaf with nothing in it should have been freed. */
	struct idr_node *leaf = top(&idr)->slots[3];
	void *saved[8];
	uint64_t free = leaf->free;
	for (int i = 0; i < 8; i++) {
		saved[i] = leaf->slots[i];
		leaf->slots[i] = NULL;
	}
	leaf->free = ~(uint64_t)0;
	EXPECT_REPORTED(idr_check(&idr), "index 192, height 1: node with nothing below it");
	for (int i = 0; i < 8; i++)
		leaf->slots[i] = saved[i];
	leaf->free = free;
	CHECK_EQ(idr_check(&idr), 0);
	/* A height no index needs. */
	void *root = idr.idr_root;
	idr.idr_root = (void *)(((uintptr_t)root & ~HEIGHT_MASK) | (MAX_HEIGHT + 1));
	EXPECT_REPORTED(idr_check(&idr), "index 0, height 7: tree too tall");
	/* A node with no height, and a height with no node. */
	idr.idr_root = (void *)((uintptr_t)root & ~HEIGHT_MASK);
	EXPECT_REPORTED(idr_check(&idr), "index 0, height 0: root and height disagree");
	idr.idr_root = (void *)(uintptr_t)2;
	EXPECT_REPORTED(idr_check(&idr), "index 0, height 2: root and height disagree");
	idr.idr_root = root;
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

TEST(old_api_reserve_corruption_is_caught)
{
	struct idr idr;

	idr_init(&idr);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	CHECK_EQ(idr_pre_get(&idr, IDR_GFP_KERNEL), 1);
#pragma GCC diagnostic pop
	CHECK_EQ(idr_check(&idr), 0);
	EXPECT_CAUGHT(&idr, &idr.idr_reserve_count, 1u, "reserve count");
	/* A full reserve with one node more on its list than its count says. */
	struct idr_node extra = { .free = 0 }, *last = idr.idr_reserve;
	CHECK_EQ(idr.idr_reserve_count, IDR_PRELOAD_NODES);
	while (last->slots[0])
		last = last->slots[0];
	last->slots[0] = &extra;
	EXPECT_REPORTED(idr_check(&idr), "reserve count");
	last->slots[0] = NULL;
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

TEST(an_ida_chunk_beyond_the_range_is_caught)
{
	struct ida ida;

	ida_init(&ida);
	CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), 0);
	CHECK_EQ(ida_alloc_min(&ida, INT_MAX, IDR_GFP_KERNEL), INT_MAX);
	unsigned h = root_height(root_load(&ida.ida_rt));
	unsigned top_slot = (unsigned)((INT_MAX / IDA_CHUNK_IDS) >> (NODE_BITS * (h - 1)));
	move_child(top(&ida.ida_rt), top_slot, top_slot + 1);
	EXPECT_REPORTED(ida_check(&ida), "chunk beyond the ID range");
	move_child(top(&ida.ida_rt), top_slot + 1, top_slot);
	CHECK_EQ(ida_check(&ida), 0);
	ida_destroy(&ida);
}
