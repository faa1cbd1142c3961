/* SPDX-License-Identifier: MIT */
/*
 * The radix tree under both the idr and the ida: 64-way nodes, each with a
 * bitmap of the slots below which a free index remains, so the lowest free
 * index at or above any start is found by following set bits: O(log64 N).
 *
 * Indices here are IDs minus the idr's origin, the first ID of its base's
 * leaf (internal.h; the ida's is 0).  The height of the tree travels
 * in the low bits of the root word, so a lockless reader gets the root and
 * the height it belongs to from one load.  Writers publish every pointer with
 * a release store only after the node it points to is fully initialized;
 * readers only ever load slots (see internal.h).
 */
#include <string.h>

#include "internal.h"


static inline uint64_t bit(unsigned off)
{
	return (uint64_t)1 << off;
}

static inline unsigned slot_offset(uint64_t index, unsigned level)
{
	return (unsigned)(index >> (NODE_BITS * (level - 1))) & NODE_MASK;
}

/* The smallest height whose tree can hold @index. */
static unsigned height_for(uint64_t index)
{
	unsigned h = 1;

	while (h < MAX_HEIGHT && index >= span(h))
		h++;
	return h;
}

static void publish_root(struct idr *idr, struct idr_node *node, unsigned h)
{
	__atomic_store_n(&idr->idr_root, (void *)((uintptr_t)node | h),
			 __ATOMIC_RELEASE);
}

/* Bumped each time a node of height 2 or more leaves a tree, after it is
 * unlinked and before it is retired, so that a twig hint (below) taken
 * before can be told apart from one still in its tree.  Process-wide, not
 * per idr: an idr destroyed and initialized again at the same address
 * would count from 0 again.  Rare: a twig covers 4096 IDs. */
static uint64_t twig_epoch;

/* A node or tree of height @height has left its tree: count it if it is a
 * twig or holds one. */
static void twigs_gone(unsigned height)
{
	if (height >= 2)
		__atomic_fetch_add(&twig_epoch, 1, __ATOMIC_RELEASE);
}

/* @node, of height @height, is unlinked from its tree: count it, then
 * retire it. */
static void retire_unlinked(struct idr *idr, struct idr_node *node,
			    unsigned height)
{
	twigs_gone(height);
	node_retire(idr, node);
}

/* Fill @p with the nodes from the root down to level @stop (or the root
 * leaf) on @index's path.  Returns false if the tree does not reach it. */
static bool walk_to(const struct idr *idr, uint64_t index, struct path *p,
		    unsigned stop)
{
	uintptr_t root = root_load(idr);
	unsigned h = root_height(root);
	struct idr_node *node = root_node(root);

	p->height = h;
	if (!h || index >= span(h))
		return false;
	for (unsigned level = h;; level--) {
		unsigned off = slot_offset(index, level);

		p->node[level] = node;
		p->off[level] = off;
		if (level <= stop)
			return true;
		node = node->slots[off];
		if (!node)
			return false;
	}
}

/* The same, down to a full leaf (trees without sparse leaves). */
static bool walk(const struct idr *idr, uint64_t index, struct path *p)
{
	return walk_to(idr, index, p, 1);
}

/*
 * The lowest index >= @start whose leaf slot is free, found by following
 * free bits down from the root, remembering the way in @p: the nodes from
 * the root down to level p->stop on the answer's path.  stop is 1 when a
 * full leaf holds the answer, 2..height when the child below that level is
 * absent (or sparse, at 2), 0 when the answer lies beyond the tree (every
 * index there is free, so it may be span(height) or more).
 *
 * Only the first candidate at each level (the one holding @start) can come
 * up empty; then the search resumes after it, one level up if need be.
 */
uint64_t tree_find_free_path(const struct idr *idr, uint64_t start,
			     struct path *p)
{
	uintptr_t root = root_load(idr);
	unsigned h = root_height(root), level = h;
	uint64_t base[MAX_HEIGHT + 1];

	p->height = h;
	p->stop = 0;
	if (!h || start >= span(h))
		return start;
	p->node[h] = root_node(root);
	base[h] = 0;
	for (;;) {
		struct idr_node *n = p->node[level];
		unsigned shift = NODE_BITS * (level - 1);
		uint64_t bits = 0;

		if (start < base[level] + span(level))
			bits = n->free &
			       (~(uint64_t)0 << ((start - base[level]) >> shift));
		if (!bits) {
			if (level == h)
				return span(h); /* full: the answer is beyond */
			start = base[level] + span(level);
			level++;
			continue;
		}
		unsigned o = (unsigned)__builtin_ctzll(bits);
		uint64_t cbase = base[level] + ((uint64_t)o << shift);
		if (start < cbase)
			start = cbase;
		p->off[level] = o;
		if (level == 1) {
			p->stop = 1;
			return start;
		}
		struct idr_node *child = n->slots[o];
		if (!child) {
			p->stop = level;
			return start;
		}
		if (level == 2 && is_sparse(child)) {
			/* Never full: room at or after start, unless this is
			 * the first candidate and its room lies before. */
			uint64_t room = ~sparse_taken(child) &
					(~(uint64_t)0 << (start - cbase));
			if (room) {
				p->stop = 2;
				return cbase + (uint64_t)__builtin_ctzll(room);
			}
			start = cbase + NODE_SLOTS;
			continue;
		}
		level--;
		p->node[level] = child;
		base[level] = cbase;
	}
}

uint64_t tree_find_free(const struct idr *idr, uint64_t start)
{
	struct path p;

	return tree_find_free_path(idr, start, &p);
}

/* Will a leaf created for @index start sparse?  Not at offset 0, where
 * dense allocation enters each new leaf, nor at the idr's base, where it
 * enters the first one, nor without a parent to hold a sparse word. */
static bool starts_sparse(const struct idr *idr, uint64_t index,
			  unsigned height, bool sparse_ok)
{
	return sparse_ok && height > 1 && (index & NODE_MASK) &&
	       index != base_index(idr);
}

/* A new path of @levels levels down to @index's leaf (the leaf included). */
static struct insert_need new_path(const struct idr *idr, uint64_t index,
				   unsigned levels, unsigned height,
				   const void *ptr, bool sparse_ok)
{
	struct insert_need need = { levels, false };

	if (levels && starts_sparse(idr, index, height, sparse_ok)) {
		need.full--;
		need.compact = !prefer_single(ptr);
	}
	return need;
}

/* What tree_insert(@index, @ptr) will take from its pool. */
struct insert_need tree_needs(const struct idr *idr, uint64_t index,
			      const void *ptr, bool sparse_ok)
{
	uintptr_t root = root_load(idr);
	unsigned h = root_height(root);
	unsigned target = height_for(index);
	const struct idr_node *node = root_node(root);

	if (!h)
		return new_path(idr, index, target, target, ptr, sparse_ok);
	if (index >= span(h)) {
		/* New levels on top, then a fresh path below the new root. */
		struct insert_need need = new_path(idr, index, target - 1,
						   target, ptr, sparse_ok);
		need.full += target - h;
		return need;
	}
	for (unsigned level = h; level > 1; level--) {
		const void *child = node->slots[slot_offset(index, level)];
		if (!child)
			return new_path(idr, index, level - 1, h, ptr, sparse_ok);
		if (level == 2 && is_sparse(child)) {
			/* A singleton becomes compact; a full compact leaf,
			 * or any sparse leaf where none may be made, a full
			 * one. */
			struct insert_need need = { 0, false };
			if (!sparse_ok || sparse_needs_full(child))
				need.full = 1;
			else
				need.compact = ((uintptr_t)child & TAG_MASK) == TAG_SINGLE;
			return need;
		}
		node = child;
	}
	return (struct insert_need){ 0, false };
}

struct idr_node *node_new(struct idr *idr, struct node_pool *pool)
{
	struct idr_node *n = pool_take(pool);

	memset(n->slots, 0, sizeof(n->slots));
	n->free = ~(uint64_t)0;
	/* A lockless find-by-handle reads the generation of free slots too
	 * (and ignores it, their pointer being NULL): make it a defined 0,
	 * which no handle carries. */
	if (pool->kind == KIND_GEN)
		memset(node_gens(n), 0, NODE_SLOTS * sizeof(uint32_t));
	count_add(&idr->idr_nodes, 1);
	return n;
}

/* Add levels on top until the tree reaches @target height. */
static void grow(struct idr *idr, unsigned target, struct node_pool *pool)
{
	uintptr_t root = root_load(idr);
	unsigned h = root_height(root);
	struct idr_node *top = root_node(root);

	if (!h) {
		publish_root(idr, node_new(idr, pool), target);
		return;
	}
	while (h < target) {
		struct idr_node *n = node_new(idr, pool);

		n->slots[0] = top;
		if (!top->free)
			n->free &= ~bit(0);
		top = n;
		publish_root(idr, top, ++h);
	}
}

/* Clear @index's free bit at level @from and above, as far as nodes fill. */
static void path_mark_full(struct path *p, unsigned from)
{
	for (unsigned level = from; level <= p->height; level++) {
		struct idr_node *n = p->node[level];

		n->free &= ~bit(p->off[level]);
		if (n->free)
			break;
	}
}

/* Mark free @off of full @leaf taken.  True if that filled the leaf: the
 * levels above must then learn it (path_mark_full() from level 2). */
static bool leaf_take(struct idr_node *leaf, unsigned off)
{
	leaf->free &= ~bit(off);
	return !leaf->free;
}

/* Claim free @index in the full leaf that tree_find_free_path() found
 * (@p->stop == 1): no walk, no memory.  Returns the slot, still NULL, for
 * the caller to publish into. */
void **tree_insert_found(struct path *p, uint64_t index)
{
	struct idr_node *leaf = p->node[1];
	unsigned off = (unsigned)(index & NODE_MASK);

	if (leaf_take(leaf, off))
		path_mark_full(p, 2);
	return &leaf->slots[off];
}

/* A removal in the hint leaf may change or free the leaf: drop the hint.
 * One below it opens a hole there: the hint stays, but no longer vouches
 * for what lies below (cyclic allocation removes behind its cursor and
 * allocates ahead of it, in the hint leaf). */
static void hint_forget_below(struct idr *idr, uint64_t index)
{
	uint64_t base = idr->idr_hint_base;

	if (index >= base + NODE_SLOTS)
		return;
	if (index >= base)
		idr->idr_hint = NULL;
	else
		idr->idr_hint_full = 0;
}

/* The slot of tree index @index in the full leaf the lookup directory
 * names for it, or NULL if the directory cannot tell: where the writer's
 * shortcuts past a walk start. */
static inline void **dir_slot(const struct idr *idr, uint64_t index)
{
	void **slot;

	return dir_lookup_any(idr, index + idr_origin(idr), &slot) == DIR_LEAF ? slot : NULL;
}

/* @leaf, which holds @index, has just filled: the levels above learn it,
 * and the hint lets the leaf go.  Out of line: the path it keeps on the
 * stack would cost every allocation a stack frame, 63 in 64 for nothing. */
__attribute__((noinline)) void leaf_filled(struct idr *idr, struct idr_node *leaf,
					   uint64_t index)
{
	struct path p;

	if (walk(idr, index, &p))
		path_mark_full(&p, 2);
	if (idr->idr_hint == leaf)
		idr->idr_hint = NULL;
}

static void path_mark_free(struct path *p)
{
	for (unsigned level = 1; level <= p->height; level++) {
		struct idr_node *n = p->node[level];
		bool was_full = !n->free;

		n->free |= bit(p->off[level]);
		if (!was_full)
			break;
	}
}

static void shrink(struct idr *idr);

/* A root whose only child is a sparse leaf stays a node (see shrink()); once
 * that leaf has become a full one, the level goes. */
static void regain_height(struct idr *idr)
{
	if (root_height(root_load(idr)) == 2)
		shrink(idr);
}

/*
 * Make the path to @index exist, mark its leaf slot occupied and, with
 * @full, no longer free, and publish @ptr there.  Takes exactly what
 * tree_needs() said from @pool.  Returns the full leaf's slot, or NULL if
 * the entry went into a sparse leaf.
 */
void **tree_insert(struct idr *idr, uint64_t index, struct node_pool *pool,
		   void *ptr, bool full, bool sparse_ok)
{
	struct path p;
	bool converted = false;

	grow(idr, height_for(index), pool);
	uintptr_t root = root_load(idr);
	struct idr_node *node = root_node(root);

	p.height = root_height(root);
	for (unsigned level = p.height;; level--) {
		unsigned off = slot_offset(index, level);

		p.node[level] = node;
		p.off[level] = off;
		if (level == 1)
			break;
		struct leaf_ref ref = { &node->slots[off], index >> NODE_BITS };
		struct idr_node *child = *ref.slot;
		if (level == 2 && child && is_sparse(child) && !sparse_ok) {
			child = sparse_to_full(idr, ref, pool);
			converted = true;
		}
		if (level == 2 && (child ? is_sparse(child) :
				   starts_sparse(idr, index, p.height, sparse_ok))) {
			if (child) {
				sparse_insert(idr, ref, (unsigned)(index & NODE_MASK),
					      ptr, pool);
				regain_height(idr);
			} else {
				sparse_new(idr, ref, (unsigned)(index & NODE_MASK),
					   ptr, pool);
			}
			return NULL; /* a sparse leaf is never full */
		}
		if (!child) {
			child = node_new(idr, pool);
			if (level == 2)
				leaf_store(idr, ref, child);
			else
				slot_store(ref.slot, child);
		}
		node = child;
	}
	if (full)
		path_mark_full(&p, 1);
	slot_store(&node->slots[p.off[1]], ptr);
	if (converted)
		regain_height(idr);
	return &node->slots[p.off[1]];
}

/* The leaf-level slot on @p, which reaches level 2. */
static struct leaf_ref path_leaf_ref(const struct path *p)
{
	uint64_t leaf = 0;

	for (unsigned level = p->height; level >= 2; level--)
		leaf = leaf << NODE_BITS | p->off[level];
	return (struct leaf_ref){ &p->node[2]->slots[p->off[2]], leaf };
}

/* The leaf-level word that covers @index, and the path above it: NULL if
 * there is none.  Writer side. */
static void *leaf_word(const struct idr *idr, uint64_t index, struct path *p)
{
	if (!walk_to(idr, index, p, 2))
		return NULL;
	if (p->height == 1)
		return p->node[1];
	return p->node[2]->slots[p->off[2]];
}

void *tree_leaf_word(const struct idr *idr, uint64_t leaf)
{
	struct path p;

	return leaf_word(idr, leaf << NODE_BITS, &p);
}

/* The node at height 2 whose slot (@leaf & NODE_MASK) holds leaf @leaf's
 * leaf-level word, or NULL if there is none: one walk serves 64 leaves. */
const struct idr_node *tree_leaf_parent(const struct idr *idr, uint64_t leaf)
{
	struct path p;

	if (!walk_to(idr, leaf << NODE_BITS, &p, 2) || p.height < 2)
		return NULL;
	return p.node[2];
}

/* The number (index >> NODE_BITS) of the lowest leaf-level word, or with
 * @highest the highest: down the lowest (highest) child of each interior
 * node.  0 below height 2. */
uint64_t tree_edge_leaf(const struct idr *idr, bool highest)
{
	uintptr_t root = root_load(idr);
	const struct idr_node *node = root_node(root);
	uint64_t leaf = 0;

	for (unsigned h = root_height(root); h >= 2; h--) {
		int i = node_edge_child(node, highest);
		if (i < 0)
			break;
		leaf = leaf << NODE_BITS | (unsigned)i;
		if (h > 2)
			node = node->slots[i];
	}
	return leaf;
}

/* Is @off allocated in the leaf-level @word?  Its value goes to *@value
 * either way (NULL or stale if not). */
static bool word_get(const void *word, unsigned off, void **value)
{
	if (is_sparse(word))
		return sparse_get(word, off, value);
	const struct idr_node *leaf = word;
	*value = leaf->slots[off];
	return !(leaf->free & bit(off));
}

/* What a removal or replace without a walk did. */
enum take { TAKEN, NOT_ALLOCATED, NEEDS_WALK };

/* The common replace, without a walk: the directory names @index's full
 * leaf.  A non-NULL slot is allocated, so only a NULL one needs the free
 * bitmap, which sits in another cache line: a replace of a random ID then
 * costs the slot's miss alone.  NEEDS_WALK if the directory cannot tell. */
static enum take replace_in_leaf(struct idr *idr, uint64_t index, void *ptr,
				 void **old)
{
	void **slot = dir_slot(idr, index);

	if (!slot)
		return NEEDS_WALK;
	void *was = *slot;
	if (!was && slot_leaf(slot, index)->free & bit(index & NODE_MASK))
		return NOT_ALLOCATED;
	*old = was;
	slot_store(slot, ptr);
	return TAKEN;
}

/* tree_replace() through the tree, for what replace_in_leaf() leaves; out
 * of line for the reason take_by_walk() is. */
__attribute__((noinline)) static void *replace_by_walk(struct idr *idr, uint64_t index,
						       void *ptr)
{
	struct path p;
	void *word = leaf_word(idr, index, &p);
	unsigned off = (unsigned)(index & NODE_MASK);
	void *old;

	if (!word || !word_get(word, off, &old))
		return IDR_ERR_PTR(-ENOENT);
	if (is_sparse(word)) {
		int err = sparse_set(idr, path_leaf_ref(&p), off, ptr);
		return err ? IDR_ERR_PTR(err) : old;
	}
	slot_store(&((struct idr_node *)word)->slots[off], ptr);
	return old;
}

/* Store @ptr under allocated @index: the old value, or IDR_ERR_PTR(-ENOENT)
 * if @index is not allocated, or of -ENOMEM as sparse_set(), with nothing
 * changed. */
void *tree_replace(struct idr *idr, uint64_t index, void *ptr)
{
	void *old;

	switch (replace_in_leaf(idr, index, ptr, &old)) {
	case TAKEN:
		return old;
	case NOT_ALLOCATED:
		return IDR_ERR_PTR(-ENOENT);
	case NEEDS_WALK:
		break;
	}
	return replace_by_walk(idr, index, ptr);
}

/* The leaf slot of @index, or NULL if no leaf covers it; *@leaf gets the
 * leaf.  Writer side. */
void **tree_lookup_slot(const struct idr *idr, uint64_t index,
			struct idr_node **leaf)
{
	struct path p;

	if (!walk(idr, index, &p))
		return NULL;
	*leaf = p.node[1];
	return &(*leaf)->slots[p.off[1]];
}

void tree_mark_full(struct idr *idr, uint64_t index)
{
	struct path p;

	if (walk(idr, index, &p))
		path_mark_full(&p, 1);
}

void tree_mark_free(struct idr *idr, uint64_t index)
{
	struct path p;

	if (walk(idr, index, &p))
		path_mark_free(&p);
}

/* While the root's only child is its first, the level is useless. */
static void shrink(struct idr *idr)
{
	uintptr_t root = root_load(idr);
	unsigned h = root_height(root);
	struct idr_node *top = root_node(root);

	while (h > 1 && only_first_child(top)) {
		struct idr_node *child = top->slots[0];

		if (is_sparse(child))
			return; /* the root must be a node: stay at height 2 */
		publish_root(idr, child, --h);
		retire_unlinked(idr, top, h + 1);
		top = child;
	}
	if (h < 2)
		dir_drop(idr); /* the directory needs a level above the leaves */
}

/* Levels @from and up: free each node left with nothing below it, then the
 * levels the root no longer needs. */
static void unlink_empty(struct idr *idr, struct path *p, unsigned from)
{
	for (unsigned level = from; node_unused(p->node[level]); level++) {
		if (level == p->height) {
			publish_root(idr, NULL, 0);
			dir_drop(idr);
			retire_unlinked(idr, p->node[level], level);
			return;
		}
		struct idr_node *parent = p->node[level + 1];
		if (level == 1)
			leaf_store(idr, path_leaf_ref(p), NULL);
		else
			slot_store(&parent->slots[p->off[level + 1]], NULL);
		parent->free |= bit(p->off[level + 1]);
		retire_unlinked(idr, p->node[level], level);
	}
	shrink(idr);
}

/* Does @taken have more than CLEAF_CAP bits?  (Without -mpopcnt,
 * __builtin_popcountll() is a library call.) */
static bool more_than_cap(uint64_t taken)
{
	for (unsigned i = 0; i < CLEAF_CAP; i++)
		taken &= taken - 1;
	return taken != 0;
}

/* Empty @index's slot in @word, the leaf-level word on path @p, mark it
 * free, and free the nodes that empties; with @sparse_ok, a leaf left
 * nearly empty takes a sparse form. */
static void release_at(struct idr *idr, struct path *p, void *word,
		       uint64_t index, bool sparse_ok)
{
	unsigned off = (unsigned)(index & NODE_MASK);

	hint_forget_below(idr, index);
	if (is_sparse(word)) {
		if (sparse_remove(idr, path_leaf_ref(p), off))
			unlink_empty(idr, p, 2);
		dir_settle(idr);
		return;
	}
	struct idr_node *leaf = word;
	p->node[1] = leaf;
	p->off[1] = off;
	slot_store(&leaf->slots[off], NULL);
	path_mark_free(p);
	if (node_unused(leaf)) {
		unlink_empty(idr, p, 1);
		dir_settle(idr);
		return;
	}
	/* ~free: the allocated IDs (in an ida leaf, the full bitmaps) */
	if (sparse_ok && p->height > 1 && !more_than_cap(~leaf->free)) {
		sparse_demote(idr, path_leaf_ref(p));
		dir_settle(idr);
	}
}

void tree_release(struct idr *idr, uint64_t index, bool sparse_ok)
{
	struct path p;
	void *word = leaf_word(idr, index, &p);

	if (word)
		release_at(idr, &p, word, index, sparse_ok);
}

/*
 * The common removal, without a walk: the lookup directory names @index's
 * full leaf, which had room before (so no free bit above it changes) and
 * keeps more than CLEAF_CAP entries (so it keeps its form).  This is what
 * release_at() would do then, and it touches only the leaf: a remove of a
 * random ID costs one cache miss and few enough instructions that the
 * next one's miss overlaps it (make bench, "remove half").
 */
static enum take take_in_leaf(struct idr *idr, uint64_t index, void **old)
{
	void **slot = dir_slot(idr, index);

	if (!slot)
		return NEEDS_WALK;
	struct idr_node *leaf = slot_leaf(slot, index);
	unsigned off = (unsigned)(index & NODE_MASK);
	if (leaf->free & bit(off))
		return NOT_ALLOCATED;
	uint64_t left = ~leaf->free & ~bit(off);
	if (!leaf->free || !more_than_cap(left))
		return NEEDS_WALK;
	hint_forget_below(idr, index);
	*old = leaf->slots[off];
	slot_store(&leaf->slots[off], NULL);
	leaf->free |= bit(off);
	return TAKEN;
}

/* tree_take() through the tree, for what take_in_leaf() leaves.  Out of
 * line: the path it keeps on the stack and the registers it needs were set
 * up and torn down on every remove, the fast ones too, which took 114
 * instructions where they now take 70 (each costs random removes time:
 * bench/README.md). */
__attribute__((noinline)) static void *take_by_walk(struct idr *idr, uint64_t index)
{
	struct path p;
	void *word = leaf_word(idr, index, &p);
	unsigned off = (unsigned)(index & NODE_MASK);
	void *old;

	if (!word || !word_get(word, off, &old))
		return NULL;
	release_at(idr, &p, word, index, sparse_allowed(idr));
	return old;
}

/* Remove @index with one walk: the pointer it held, NULL if it held NULL
 * or was not allocated. */
void *tree_take(struct idr *idr, uint64_t index)
{
	void *old;

	switch (take_in_leaf(idr, index, &old)) {
	case TAKEN:
		return old;
	case NOT_ALLOCATED:
		return NULL;
	case NEEDS_WALK:
		break;
	}
	return take_by_walk(idr, index);
}

void tree_destroy(struct idr *idr, void (*leaf_fn)(void *entry))
{
	uintptr_t root = root_load(idr);

	if (!root)
		return;
	publish_root(idr, NULL, 0);
	dir_drop(idr);
	idr->idr_hint = NULL;
	twigs_gone(root_height(root));
	if (leaf_fn)
		subtree_free(root_node(root), root_height(root), idr_kind(idr),
			     leaf_fn);
	else
		subtree_retire(idr, root_node(root), root_height(root));
	__atomic_store_n(&idr->idr_nodes, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&idr->idr_sparse, 0, __ATOMIC_RELAXED);
}

/* Every entry of sparse leaf-level @word, whose leaf starts at ID @base.
 * The walk starts at a leaf boundary and ends at INT_MAX, the last ID of a
 * leaf, so a leaf it reaches is always visited whole. */
static int sparse_each(const void *word, uint64_t base, tree_visit_fn fn,
		       void *ctx)
{
	unsigned from = 0, off;
	void *entry;

	while (from < NODE_SLOTS && sparse_next(word, from, &off, &entry)) {
		int ret = fn((int)(base + off), entry, ctx);
		if (ret)
			return ret;
		from = off + 1;
	}
	return 0;
}

/* The entries of @n's subtree (height @h, its first ID @base) up to ID
 * @last, in order, to @fn until it returns nonzero.  One walk: a leaf's
 * entries cost a slot load each, not a descent from the root. */
static int subtree_each(const struct idr_node *n, unsigned h, uint64_t base,
			uint64_t last, tree_visit_fn fn, void *ctx)
{
	unsigned shift = NODE_BITS * (h - 1);

	for (unsigned o = 0; o < NODE_SLOTS; o++) {
		uint64_t cbase = base + ((uint64_t)o << shift);
		if (cbase > last)
			break;
		void *child = slot_load(&n->slots[o]);
		int ret;
		if (!child)
			continue;
		if (h == 1)
			ret = fn((int)cbase, child, ctx);
		else if (h == 2 && is_sparse(child))
			ret = sparse_each(child, cbase, fn, ctx);
		else
			ret = subtree_each(child, h - 1, cbase, last, fn, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

int tree_for_each(const struct idr *idr, tree_visit_fn fn, void *data)
{
	uintptr_t root = root_load(idr);
	uint64_t origin = idr_origin(idr);

	if (!root)
		return 0;
	/* Indices plus the origin, so that each entry comes with its ID. */
	return subtree_each(root_node(root), root_height(root), origin, INT_MAX,
			    fn, data);
}

/* Where to go on once the subtree of @level ending just below @index is
 * done: its parent's level, or higher while @index ends the parent's
 * subtree too; 0 once it ends the root's (of height @h). */
static unsigned climb(uint64_t index, unsigned level, unsigned h)
{
	do {
		if (level == h)
			return 0;
		level++;
	} while (!(index & (span(level) - 1)));
	return level;
}

/* ---- idr_get_next()'s walk ---- */

/* A twig is a height-2 node: its slots hold the leaves.  This thread's last
 * tree_next_entry() remembers the twig it searched, with the tree's root
 * and the twig_epoch it saw, and the next call, usually for the next index
 * in the same twig, starts there instead of at the root.  On a sparse idr
 * the walk down was most of each idr_get_next(): three dependent loads
 * before the twig's slot, each call waiting on the one before for its
 * index.
 *
 * Why a remembered twig is safe to read: the call that uses it runs inside
 * a read-side section (or holds the writer lock, for IDR_F_NO_RCU), and
 * loads twig_epoch first.  A twig that had left its tree and been freed
 * since was unlinked, then counted in twig_epoch, then freed a grace
 * period later (at once without RCU, after the count); a section still
 * running when that grace period ended began after it started, and so
 * sees the count.  The root is compared too, so that an idr freed with IDs
 * still in it (a leak, its nodes never retired) and another initialized at
 * its address do not share a hint. */
struct twig_hint {
	const struct idr *idr;
	uintptr_t root;
	uint64_t epoch;
	uint64_t base;
	const struct idr_node *twig;
};
static _Thread_local struct twig_hint twig_hint __attribute__((tls_model("initial-exec")));

/* Start the compact leaf that the next idr_get_next() will most likely
 * read, the next leaf after slot @o, on its way into the cache.  Walking a
 * sparse idr that is not in cache waits on each compact leaf in turn, each
 * call needing the last one's result; a leaf asked for one call ahead
 * overlaps those waits (make bench, "iterate after 99% removed", in six
 * runs in turn: 1.37x to 1.70x judy's time before, 1.04x to 1.36x after).
 * It looks no further than the next 8 slots: asking for more, two leaves
 * ahead, measured no better than asking for none. */
static void prefetch_next_leaf(const struct idr_node *t, unsigned o)
{
	for (unsigned k = o + 1; k < NODE_SLOTS && k <= o + 8; k++) {
		uintptr_t leaf = (uintptr_t)slot_load(&t->slots[k]);
		if (leaf) {
			if ((leaf & TAG_MASK) == TAG_COMPACT)
				__builtin_prefetch((const void *)(leaf & ~TAG_MASK));
			return;
		}
	}
}

/* The first entry at or after @index and at most @last under twig @t, whose
 * first index is @base; INDEX_NONE if it has none. */
static uint64_t twig_next(const struct idr_node *t, uint64_t base,
			  uint64_t index, uint64_t last, void **entry)
{
	for (unsigned o = slot_offset(index, 2); o < NODE_SLOTS; o++) {
		uint64_t cbase = base + ((uint64_t)o << NODE_BITS);
		void *leaf = slot_load(&t->slots[o]);
		unsigned from = index > cbase ? (unsigned)(index - cbase) : 0, off;

		if (cbase > last)
			return INDEX_NONE;
		if (leaf && (is_sparse(leaf) ? sparse_next(leaf, from, &off, entry)
					     : leaf_next(((const struct idr_node *)leaf)->slots,
							 from, &off, entry))) {
			prefetch_next_leaf(t, o);
			return cbase + off <= last ? cbase + off : INDEX_NONE;
		}
	}
	return INDEX_NONE;
}

/* Down from the root to the first entry at or after @index, without
 * recursion, through the twig that holds it; a twig with nothing left
 * sends the search on in its parent, which the descent kept, not back to
 * the root.  A reader may follow those kept nodes: an interior node leaves
 * the tree only once it is empty or, shrinking, keeps its one child in slot
 * 0, and RCU keeps it readable for the call. */
static uint64_t walk_next(const struct idr *idr, uintptr_t root,
			  uint64_t epoch, uint64_t index, uint64_t last,
			  void **entry)
{
	unsigned h = root_height(root), level = h;
	const struct idr_node *path[MAX_HEIGHT + 1];

	if (!h)
		return INDEX_NONE;
	if (last >= span(h))
		last = span(h) - 1;
	path[h] = root_node(root);
	while (index <= last) {
		const struct idr_node *n = path[level];
		unsigned shift = NODE_BITS * (level - 1);
		uint64_t node_base = index & ~(span(level) - 1);
		if (level == 2) {
			twig_hint = (struct twig_hint){ idr, root, epoch, node_base, n };
			uint64_t found = twig_next(n, node_base, index, last, entry);
			if (found != INDEX_NONE)
				return found;
			index = node_base + span(2);
			if (!(level = climb(index, 2, h)))
				return INDEX_NONE;
			continue;
		}
		unsigned o = (unsigned)(index >> shift) & NODE_MASK;
		void *child;
		while (!(child = slot_load(&n->slots[o])) && ++o < NODE_SLOTS)
			;
		if (!child) {
			index = node_base + span(level);
			if (!(level = climb(index, level, h)))
				return INDEX_NONE;
			continue;
		}
		uint64_t cbase = node_base + ((uint64_t)o << shift);
		if (cbase > index)
			index = cbase;
		if (index > last)
			return INDEX_NONE;
		if (level == 1) { /* the root is the only leaf */
			*entry = child;
			return index;
		}
		path[--level] = child;
	}
	return INDEX_NONE;
}

uint64_t tree_next_entry(const struct idr *idr, uint64_t index, uint64_t last,
			 void **entry)
{
	uint64_t epoch = __atomic_load_n(&twig_epoch, __ATOMIC_ACQUIRE);
	uintptr_t root = root_load(idr);
	const struct twig_hint *hint = &twig_hint;

	if (hint->idr == idr && hint->root == root && hint->epoch == epoch &&
	    index - hint->base < span(2)) {
		uint64_t found = twig_next(hint->twig, hint->base, index, last, entry);
		if (found != INDEX_NONE)
			return found;
		index = hint->base + span(2);
	}
	return walk_next(idr, root, epoch, index, last, entry);
}
