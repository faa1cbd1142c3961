/* SPDX-License-Identifier: MIT */
/*
 * The radix tree under both the idr and the ida: 64-way nodes, each with a
 * bitmap of the slots below which a free index remains, so the lowest free
 * index at or above any start is found by following set bits: O(log64 N).
 *
 * Indices here are IDs minus the idr's base.  The height of the tree travels
 * in the low bits of the root word, so a lockless reader gets the root and
 * the height it belongs to from one load.  Writers publish every pointer with
 * a release store only after the node it points to is fully initialized;
 * readers only ever load slots (see internal.h).
 */
#include <string.h>

#include "internal.h"

struct path {
	struct idr_node *node[MAX_HEIGHT + 1]; /* node[height] is the root */
	unsigned off[MAX_HEIGHT + 1];          /* slot taken at each level */
	unsigned height;
};

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

/* Fill @p with the nodes from the root to @index's leaf.  Returns false if
 * the tree does not reach that leaf. */
static bool walk(const struct idr *idr, uint64_t index, struct path *p)
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
		if (level == 1)
			return true;
		node = node->slots[off];
		if (!node)
			return false;
	}
}

static uint64_t subtree_find_free(const struct idr_node *n, unsigned h,
				  uint64_t base, uint64_t start)
{
	unsigned shift = NODE_BITS * (h - 1);
	unsigned off = (unsigned)((start - base) >> shift);
	uint64_t bits = n->free & (~(uint64_t)0 << off);

	/* Only the first candidate (the one holding @start) can fail: any later
	 * set bit guarantees a free index from that child's first index on. */
	while (bits) {
		unsigned o = (unsigned)__builtin_ctzll(bits);
		uint64_t cbase = base + ((uint64_t)o << shift);
		uint64_t cstart = o == off ? start : cbase;
		const struct idr_node *child;

		if (h == 1 || !(child = n->slots[o]))
			return cstart;
		uint64_t found = subtree_find_free(child, h - 1, cbase, cstart);
		if (found != INDEX_NONE)
			return found;
		bits &= bits - 1;
	}
	return INDEX_NONE;
}

/* The lowest index >= @start whose leaf slot is free.  Beyond the tree's
 * reach every index is free, so the answer may lie past span(height). */
uint64_t tree_find_free(const struct idr *idr, uint64_t start)
{
	uintptr_t root = root_load(idr);
	unsigned h = root_height(root);

	if (!h || start >= span(h))
		return start;
	uint64_t found = subtree_find_free(root_node(root), h, 0, start);
	return found == INDEX_NONE ? span(h) : found;
}

/* How many nodes tree_insert(@index) will take from its pool. */
unsigned tree_nodes_needed(const struct idr *idr, uint64_t index)
{
	uintptr_t root = root_load(idr);
	unsigned h = root_height(root);
	unsigned target = height_for(index);
	const struct idr_node *node = root_node(root);

	if (!h)
		return target;
	if (index >= span(h))
		/* New levels on top, then a fresh path below the new root. */
		return (target - h) + (target - 1);
	for (unsigned level = h; level > 1; level--) {
		node = node->slots[slot_offset(index, level)];
		if (!node)
			return level - 1;
	}
	return 0;
}

static struct idr_node *node_new(struct idr *idr, struct node_pool *pool)
{
	struct idr_node *n = pool_take(pool);

	memset(n->slots, 0, sizeof(n->slots));
	n->free = ~(uint64_t)0;
	n->children = 0;
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
		n->children = 1;
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

/*
 * Make the path to @index exist, mark its leaf slot occupied and, with
 * @full, no longer free.  Takes exactly tree_nodes_needed() nodes from @pool.
 * Returns the leaf slot, for the caller to publish its entry into.
 */
void **tree_insert(struct idr *idr, uint64_t index, struct node_pool *pool,
		   bool full)
{
	struct path p;

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
		struct idr_node *child = node->slots[off];
		if (!child) {
			child = node_new(idr, pool);
			slot_store(&node->slots[off], child);
			node->children |= bit(off);
		}
		node = child;
	}
	node->children |= bit(p.off[1]);
	if (full)
		path_mark_full(&p, 1);
	return &node->slots[p.off[1]];
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

bool tree_is_free(const struct idr *idr, uint64_t index)
{
	struct path p;

	return !walk(idr, index, &p) || (p.node[1]->free & bit(p.off[1]));
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

	while (h > 1 && top->children == 1) {
		struct idr_node *child = top->slots[0];

		publish_root(idr, child, --h);
		node_retire(idr, top);
		top = child;
	}
}

/* Empty @index's leaf slot, mark it free, and free the nodes that empties. */
void tree_release(struct idr *idr, uint64_t index)
{
	struct path p;

	if (!walk(idr, index, &p))
		return;
	slot_store(&p.node[1]->slots[p.off[1]], NULL);
	p.node[1]->children &= ~bit(p.off[1]);
	path_mark_free(&p);
	for (unsigned level = 1; p.node[level]->children == 0; level++) {
		if (level == p.height) {
			publish_root(idr, NULL, 0);
			node_retire(idr, p.node[level]);
			return;
		}
		struct idr_node *parent = p.node[level + 1];
		slot_store(&parent->slots[p.off[level + 1]], NULL);
		parent->children &= ~bit(p.off[level + 1]);
		parent->free |= bit(p.off[level + 1]);
		node_retire(idr, p.node[level]);
	}
	shrink(idr);
}

void tree_destroy(struct idr *idr, void (*leaf_fn)(void *entry))
{
	uintptr_t root = root_load(idr);

	if (!root)
		return;
	publish_root(idr, NULL, 0);
	if (leaf_fn)
		subtree_free(root_node(root), root_height(root), idr_kind(idr),
			     leaf_fn);
	else
		subtree_retire(idr, root_node(root), root_height(root));
	__atomic_store_n(&idr->idr_nodes, 0, __ATOMIC_RELAXED);
}

static uint64_t subtree_next(const struct idr_node *n, unsigned h,
			     uint64_t base, uint64_t start, uint64_t last,
			     void **entry)
{
	unsigned shift = NODE_BITS * (h - 1);

	for (unsigned o = (unsigned)((start - base) >> shift); o < NODE_SLOTS;
	     o++) {
		uint64_t cbase = base + ((uint64_t)o << shift);
		if (cbase > last)
			break;
		void *child = slot_load(&n->slots[o]);
		if (!child)
			continue;
		if (h == 1) {
			*entry = child;
			return cbase;
		}
		uint64_t found = subtree_next(child, h - 1, cbase,
					      cbase > start ? cbase : start,
					      last, entry);
		if (found != INDEX_NONE)
			return found;
	}
	return INDEX_NONE;
}

/* The first index in [@index, @last] whose leaf slot is non-NULL, with the
 * entry in *@entry; INDEX_NONE if none.  Safe for lockless readers. */
uint64_t tree_next_entry(const struct idr *idr, uint64_t index, uint64_t last,
			 void **entry)
{
	uintptr_t root = root_load(idr);
	unsigned h = root_height(root);

	if (!h || index >= span(h) || index > last)
		return INDEX_NONE;
	return subtree_next(root_node(root), h, 0, index, last, entry);
}
