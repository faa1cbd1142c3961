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

/* Flip @bits in *@word and expect the check to fail, then flip back. */
#define EXPECT_CAUGHT(idr, word, bits, needle)                               \
	do {                                                                 \
		int diags = tu_diag_count();                                 \
		*(word) ^= (bits);                                           \
		CHECK_EQ(idr_check(idr), -EUCLEAN);                          \
		CHECK_EQ(tu_diag_count(), diags + 1);                        \
		if (!strstr(tu_diag_last(), needle))                         \
			fprintf(stderr, "    diagnostic: %s\n", tu_diag_last()); \
		CHECK(strstr(tu_diag_last(), needle) != NULL);               \
		*(word) ^= (bits);                                           \
		CHECK_EQ(idr_check(idr), 0);                                 \
	} while (0)

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
	EXPECT_CAUGHT(&idr, &leaf->free, (uint64_t)1 << 7, "disagrees with the child");
	/* Leaf 3 (IDs 192..199) has room: an entry marked free is caught there. */
	EXPECT_CAUGHT(&idr, &((struct idr_node *)top(&idr)->slots[3])->free,
		      (uint64_t)1 << 1, "entry in a free slot");
	idr_destroy(&idr);
}

TEST(interior_bits_corruption_is_caught)
{
	struct idr idr;

	fill(&idr, 200);
	struct idr_node *root = top(&idr);
	/* Leaf 0 is full: a free bit for it would send searches into it. */
	EXPECT_CAUGHT(&idr, &root->free, (uint64_t)1, "free bit disagrees");
	/* Slot 5 is empty: marking it full would hide its IDs from searches. */
	EXPECT_CAUGHT(&idr, &root->free, (uint64_t)1 << 5, "free bit disagrees");
	idr_destroy(&idr);
}

TEST(node_count_and_shape_corruption_is_caught)
{
	struct idr idr;

	fill(&idr, 200);
	EXPECT_CAUGHT(&idr, &idr.idr_nodes, (size_t)1, "node count");
	/* A root whose only child is its first should have been shrunk. */
	struct idr_node *root = top(&idr);
	void *saved[3] = { root->slots[1], root->slots[2], root->slots[3] };
	uint64_t free = root->free;
	root->slots[1] = root->slots[2] = root->slots[3] = NULL;
	root->free = ~(uint64_t)1;
	CHECK_EQ(idr_check(&idr), -EUCLEAN);
	CHECK(strstr(tu_diag_last(), "unshrunk") != NULL);
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
	CHECK_EQ(idr_check(&idr), -EUCLEAN);
	CHECK(strstr(tu_diag_last(), "entry in a free slot") != NULL);
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
	bitmap[3] ^= 1;
	CHECK_EQ(ida_check(&ida), -EUCLEAN);
	CHECK(strstr(tu_diag_last(), "free bit is wrong") != NULL);
	bitmap[3] ^= 1;
	ida.ida_bitmaps++;
	CHECK_EQ(ida_check(&ida), -EUCLEAN);
	CHECK(strstr(tu_diag_last(), "bitmap count") != NULL);
	ida.ida_bitmaps--;
	CHECK_EQ(ida_check(&ida), 0);
	ida_destroy(&ida);
}

TEST(lookup_directory_corruption_is_caught)
{
	struct idr idr;

	fill(&idr, 20000);
	struct leafdir *d = idr.idr_dir;
	CHECK(d != NULL);
	/* An entry that no longer matches its leaf, as a missed update
	 * would leave it. */
	uintptr_t *entry = &d->leaf[100];
	EXPECT_CAUGHT(&idr, entry, (uintptr_t)16, "lookup directory disagrees");
	/* A directory left behind on a tree without interior levels. */
	idr_destroy(&idr);
	fill(&idr, 10);
	struct leafdir *stray = malloc(dir_bytes(1));
	stray->cap = stray->keyed = 1;
	stray->first = 0;
	stray->leaf[0] = dir_entry(top(&idr), 0);
	idr.idr_dir = stray;
	CHECK_EQ(idr_check(&idr), -EUCLEAN);
	CHECK(strstr(tu_diag_last(), "without interior levels") != NULL);
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
	CHECK_EQ(idr_check(&idr), -EUCLEAN);
	CHECK(strstr(tu_diag_last(), "free index below") != NULL);
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
	CHECK_EQ(ida_check(&ida), -EUCLEAN);
	CHECK(strstr(tu_diag_last(), "low mark") != NULL);
	ida.ida_hint_low--;
	ida.ida_hint_chunk = 1;
	CHECK_EQ(ida_check(&ida), -EUCLEAN);
	CHECK(strstr(tu_diag_last(), "names no bitmap") != NULL);
	ida.ida_hint_chunk = 2;
	/* A free ID below the hint: it must stop vouching for what is below. */
	ida_free(&ida, 7);
	CHECK_EQ(ida.ida_hint_full, 0);
	CHECK_EQ(ida_check(&ida), 0);
	ida.ida_hint_full = 1;
	CHECK_EQ(ida_check(&ida), -EUCLEAN);
	CHECK(strstr(tu_diag_last(), "room below") != NULL);
	ida.ida_hint_full = 0;
	CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), 7);
	CHECK_EQ(ida_alloc(&ida, IDR_GFP_KERNEL), 3000);
	CHECK_EQ(ida_check(&ida), 0);
	ida_destroy(&ida);
}
