/* SPDX-License-Identifier: MIT */
/*
 * Structural self-check: walk a whole tree and verify every invariant the
 * writers rely on.  Each rule below is one the search or the freeing code
 * would silently get wrong if it were broken, so the model tests and the
 * fuzzer call this after every step.
 */
#include "internal.h"

struct census {
	const char *func;
	bool ida;
	bool gens; /* IDR_F_HANDLES: every allocated slot has a generation */
	uint64_t limit; /* highest index an entry may have */
	size_t nodes, bitmaps, sparse;
};

static int violation(const struct census *c, uint64_t base, unsigned h,
		     const char *what)
{
	report(c->func, "index %llu, height %u: %s", (unsigned long long)base, h,
	       what);
	return -EUCLEAN;
}

static inline bool has(uint64_t bits, unsigned i)
{
	return (bits >> i) & 1;
}

static int check_ida_leaf(struct census *c, const struct idr_node *n,
			  uint64_t base)
{
	for (unsigned i = 0; i < NODE_SLOTS; i++) {
		const uint64_t *bitmap = n->slots[i];
		bool any = false, full = true;

		if (!bitmap) {
			if (!has(n->free, i))
				return violation(c, base + i, 1,
						 "absent bitmap marked full");
			continue;
		}
		for (unsigned w = 0; w < IDA_CHUNK_WORDS; w++) {
			any |= bitmap[w] != 0;
			full &= bitmap[w] == ~(uint64_t)0;
		}
		if (!any)
			return violation(c, base + i, 1, "empty bitmap kept");
		if (has(n->free, i) == full)
			return violation(c, base + i, 1, "bitmap's free bit is wrong");
		if (base + i > c->limit)
			return violation(c, base + i, 1, "chunk beyond the ID range");
		c->bitmaps++;
	}
	return 0;
}

static int check_idr_leaf(const struct census *c, struct idr_node *n,
			  uint64_t base)
{
	for (unsigned i = 0; i < NODE_SLOTS; i++) {
		bool allocated = !has(n->free, i);
		if (n->slots[i] && !allocated)
			return violation(c, base + i, 1, "entry in a free slot");
		if (allocated && base + i > c->limit)
			return violation(c, base + i, 1, "ID beyond the ID range");
		if (allocated && c->gens && !node_gens(n)[i])
			return violation(c, base + i, 1, "allocated ID without a generation");
	}
	return 0;
}

/* A sparse leaf: never full, never empty, offsets distinct. */
static int check_sparse(struct census *c, void *word, uint64_t base)
{
	if (c->ida || c->gens)
		return violation(c, base, 1, "sparse leaf in a tree that has none");
	if (((uintptr_t)word & TAG_MASK) == TAG_COMPACT) {
		const struct cleaf *leaf = (const void *)((uintptr_t)word & ~TAG_MASK);
		uint64_t seen = 0;
		for (unsigned lane = 0; lane < 8; lane++) {
			unsigned off = (unsigned)(leaf->lanes >> (8 * lane)) & 0xff;
			if (off == LANE_FREE)
				continue;
			if (lane >= CLEAF_CAP || off >= NODE_SLOTS || has(seen, off))
				return violation(c, base, 1, "compact leaf lanes are bad");
			seen |= (uint64_t)1 << off;
		}
		if (!seen)
			return violation(c, base, 1, "empty compact leaf kept");
		c->sparse++;
	}
	uint64_t taken = sparse_taken(word);
	for (uint64_t t = taken; t; t &= t - 1)
		if (base + (uint64_t)__builtin_ctzll(t) > c->limit)
			return violation(c, base, 1, "ID beyond the ID range");
	return 0;
}

static int check_node(struct census *c, struct idr_node *n, unsigned h,
		      uint64_t base)
{
	c->nodes++;
	if (node_unused(n))
		return violation(c, base, h, "node with nothing below it");
	if (h == 1)
		return c->ida ? check_ida_leaf(c, n, base) :
				check_idr_leaf(c, n, base);
	for (unsigned i = 0; i < NODE_SLOTS; i++) {
		struct idr_node *child = n->slots[i];
		uint64_t cbase = base + (uint64_t)i * span(h - 1);

		if (h == 2 && is_sparse(child)) {
			int err = has(n->free, i) ? check_sparse(c, child, cbase) :
				  violation(c, cbase, h, "sparse leaf marked full");
			if (err)
				return err;
			continue;
		}
		if (has(n->free, i) != (!child || child->free))
			return violation(c, cbase, h,
					 "free bit disagrees with the child");
		if (child) {
			int err = check_node(c, child, h - 1, cbase);
			if (err)
				return err;
		}
	}
	return 0;
}

static int check_tree(struct census *c, const struct idr *idr)
{
	uintptr_t root = root_load(idr);
	unsigned h = root_height(root);
	struct idr_node *top = root_node(root);

	if (!h || !top)
		return h || top ? violation(c, 0, h, "root and height disagree") : 0;
	if (h > MAX_HEIGHT)
		return violation(c, 0, h, "tree too tall");
	if (h > 1 && only_first_child(top) && !(h == 2 && is_sparse(top->slots[0])))
		return violation(c, 0, h, "root level left unshrunk");
	return check_node(c, top, h, 0);
}

static int check_reserve(const struct census *c, const struct idr *idr)
{
	unsigned n = 0;

	for (const struct idr_node *r = idr->idr_reserve; r && n <= IDR_PRELOAD_NODES;
	     r = r->slots[0])
		n++;
	if (n != idr->idr_reserve_count || n > IDR_PRELOAD_NODES)
		return violation(c, 0, 0, "old-API reserve count is wrong");
	return 0;
}

/* The lookup directory, if any, must show exactly the tree's leaf-level
 * words, and only above height 1 (dir.c). */
static int check_dir(const struct census *c, const struct idr *idr)
{
	const struct leafdir *d = dir_load(idr);

	if (!d)
		return 0;
	if (root_height(root_load(idr)) < 2)
		return violation(c, 0, root_height(root_load(idr)),
				 "lookup directory on a tree without interior levels");
	if (d->keyed != (d->first ? 0 : d->cap))
		return violation(c, d->first << NODE_BITS, 1,
				 "lookup directory is neither keyed nor a span");
	size_t named = 0;
	for (size_t j = 0; j < d->cap; j++) {
		uint64_t k = d->first + j;
		if (d->leaf[j] != dir_entry(dir_leaf_word(idr, k), k))
			return violation(c, k << NODE_BITS, 1,
					 "lookup directory disagrees with the tree");
		named += dir_names_leaf(d->leaf[j]);
	}
	if (named != d->named)
		return violation(c, d->first << NODE_BITS, 1,
				 "lookup directory miscounts its leaves");
	return 0;
}

/* The allocation hint (tree.c) must name a full leaf of the tree at its
 * base, and "every index below it is taken" must be true. */
static int check_hint(const struct census *c, const struct idr *idr)
{
	const void *leaf = idr->idr_hint;
	uint64_t base = idr->idr_hint_base;

	if (!leaf)
		return 0;
	if (base & NODE_MASK || tree_leaf_word(idr, base >> NODE_BITS) != leaf)
		return violation(c, base, 1, "allocation hint names no leaf of the tree");
	if (idr->idr_hint_full && tree_find_free(idr, base_index(idr)) < base)
		return violation(c, base, 1, "allocation hint has a free index below it");
	return 0;
}

int idr_check(const struct idr *idr)
{
	struct census c = { "idr_check", false, idr_kind(idr) == KIND_GEN,
			    UINT32_MAX - idr_origin(idr), 0, 0, 0 };
	int err = check_tree(&c, idr);

	if (!err && c.nodes != __atomic_load_n(&idr->idr_nodes, __ATOMIC_RELAXED))
		err = violation(&c, 0, 0, "node count is wrong");
	if (!err && c.sparse != __atomic_load_n(&idr->idr_sparse, __ATOMIC_RELAXED))
		err = violation(&c, 0, 0, "compact leaf count is wrong");
	if (!err)
		err = check_dir(&c, idr);
	if (!err)
		err = check_hint(&c, idr);
	return err ? err : check_reserve(&c, idr);
}

/* The ida's allocation hint (ida.c) must name its chunk's bitmap, whose
 * bits below the low mark are set; "every chunk below is full" must hold. */
static int check_ida_hint(const struct census *c, const struct ida *ida)
{
	const uint64_t *bitmap = ida->ida_hint;
	uint64_t chunk = ida->ida_hint_chunk;
	struct idr_node *leaf;

	if (!bitmap)
		return 0;
	void **slot = tree_lookup_slot(&ida->ida_rt, chunk, &leaf);
	if (!slot || *slot != bitmap)
		return violation(c, chunk, 1, "allocation hint names no bitmap of the ida");
	for (unsigned b = 0; b < ida->ida_hint_low && b < IDA_CHUNK_IDS; b++)
		if (!(bitmap[b / 64] >> (b % 64) & 1))
			return violation(c, chunk, 1, "allocation hint's low mark is wrong");
	if (ida->ida_hint_full && tree_find_free(&ida->ida_rt, 0) < chunk)
		return violation(c, chunk, 1, "allocation hint has a chunk with room below it");
	return 0;
}

int ida_check(struct ida *ida)
{
	struct census c = { "ida_check", true, false, INT_MAX / IDA_CHUNK_IDS, 0, 0, 0 };

	idr_lock(&ida->ida_rt);
	int err = check_tree(&c, &ida->ida_rt);
	if (!err)
		err = check_ida_hint(&c, ida);
	if (!err && c.nodes != ida->ida_rt.idr_nodes)
		err = violation(&c, 0, 0, "node count is wrong");
	if (!err && c.bitmaps != ida->ida_bitmaps)
		err = violation(&c, 0, 0, "bitmap count is wrong");
	idr_unlock(&ida->ida_rt);
	return err;
}
