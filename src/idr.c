/* SPDX-License-Identifier: MIT */
/* The idr API over the tree: indices are IDs minus the idr's origin, the
 * first ID of its base's leaf (internal.h).  The lookup directory is keyed
 * by ID, so idr_find() has no base to load or subtract (bench/README.md,
 * "random lookup"). */
#include <string.h>

#include "internal.h"

void idr_init_flags(struct idr *idr, int base, unsigned int flags)
{
	static const struct idr empty = IDR_INIT(empty);

	*idr = empty;
	idr->idr_base = base > 0 ? (unsigned)base : 0;
	idr->idr_flags = flags & (IDR_F_NO_RCU | IDR_F_HANDLES);
	if (flags & IDR_F_HANDLES)
		stock_kind(KIND_GEN);
}

void idr_init_base(struct idr *idr, int base)
{
	idr_init_flags(idr, base, 0);
}

void idr_init(struct idr *idr)
{
	idr_init_flags(idr, 0, 0);
}

void idr_destroy(struct idr *idr)
{
	writer_enter(idr, "idr_destroy");
	tree_destroy(idr, NULL);
	compat_drain(idr);
	idr_set_cursor(idr, 0);
	writer_exit(idr);
}

/* Publish @ptr in the slot just claimed for @index: in a handle idr the
 * generation goes first (see handle.c). */
static void publish(struct idr *idr, void **slot, uint64_t index, void *ptr)
{
	if (idr_kind(idr) == KIND_GEN)
		stamp_generation(idr, slot, index);
	slot_store(slot, ptr);
}

/* Only an allocation that may block, outside a preload section, calls the
 * allocator for the lookup directory; any other takes what the stash set
 * aside, or goes without. */
static bool may_block(idr_gfp_t gfp)
{
	return (gfp & IDR_GFP_KERNEL) && !(gfp & (IDR_GFP_NOWAIT | IDR_GFP_ATOMIC)) &&
	       !in_preload();
}

/* @index needs a new node, a new form of sparse leaf, or a taller tree:
 * gather every node it takes (and a larger lookup directory, if it is due
 * and can be had) first, so that a failure changes nothing.  *@slot gets
 * @index's slot if it went into a full leaf, else NULL. */
static int alloc_slow(struct idr *idr, void *ptr, uint64_t index,
		      struct node_pool *fixed, idr_gfp_t gfp, void ***slot)
{
	struct node_pool own = { .count = 0 }, *pool = fixed ? fixed : &own;
	enum node_kind kind = idr_kind(idr);
	/* The old API's reserve holds full nodes only: no sparse leaves, and
	 * no directory (its callers allocate under their lock). */
	bool sparse_ok = !fixed && sparse_allowed(idr);
	struct insert_need need = tree_needs(idr, index, ptr, sparse_ok);
	uint64_t dir_first = 0;
	size_t dir_cap = fixed ? 0 : dir_wanted(idr, index, &dir_first);
	struct leafdir *dir = NULL;

	if (fixed && need.full > fixed->count)
		return -EAGAIN;
	/* A statically initialized handle idr: from now on idr_preload()
	 * stocks its kind too. */
	if (kind == KIND_GEN)
		stock_kind(kind);
	if (!fixed && pool_fill(pool, kind, need))
		return -ENOMEM;
	/* The directory only speeds lookups up: without it they walk the
	 * tree, so an allocator that refuses it fails nothing. */
	if (dir_cap)
		dir = dir_obtain(dir_cap, may_block(gfp));
	if (kind == KIND_GEN) {
		*slot = tree_insert(idr, index, pool, NULL, true, false);
		publish(idr, *slot, index, ptr);
	} else {
		*slot = tree_insert(idr, index, pool, ptr, true, sparse_ok);
	}
	if (dir)
		dir_install(idr, dir, dir_first);
	else if (!fixed && *slot)
		dir_missed(idr, index);
	return 0;
}

/* An allocation neither the hint nor the directory's leaf answered: the
 * lowest free ID in [@min, @max] (IDs, both inclusive; @min at least the
 * idr's base and at most @max) by a walk, and new nodes if it takes them;
 * or a negative errno.  Nodes come from @fixed when given (the deprecated
 * API's per-idr reserve: -EAGAIN when it is too small), else from the
 * stash and then the allocator.  Out of line, so that the allocations the
 * others answer pay for none of its stack frame (bench/README.md: each
 * instruction costs). */
__attribute__((noinline)) static int64_t alloc_by_walk(struct idr *idr, void *ptr,
						       uint64_t min, uint64_t max,
						       struct node_pool *fixed,
						       idr_gfp_t gfp)
{
	uint64_t origin = idr_origin(idr), start = min - origin, index;
	struct path p;
	void **slot;

	index = tree_find_free_path(idr, start, &p);
	if (index > max - origin)
		return -ENOSPC;
	if (p.stop == 1) {
		/* The common case: a full leaf with room is already there. */
		slot = tree_insert_found(&p, index);
		publish(idr, slot, index, ptr);
		hint_set(idr, slot, index, start);
	} else {
		int err = alloc_slow(idr, ptr, index, fixed, gfp, &slot);
		if (err)
			return err;
		if (slot) /* a full leaf: the next allocation may start there */
			hint_set(idr, slot, index, start);
	}
	return (int64_t)(index + origin);
}

/* What a fast path's claim of @index in @leaf leaves for a call: a handle
 * idr's generation, and a leaf it filled. */
static inline void claim_finish(struct idr *idr, void *ptr, struct idr_node *leaf,
				uint64_t index)
{
	publish(idr, &leaf->slots[index & NODE_MASK], index, ptr);
	if (!leaf->free)
		leaf_filled(idr, leaf, index);
}

/* A fast path's claim of free slot @off of @leaf for @ptr: the bit taken,
 * and the pointer stored unless there is more to do (a leaf that filled, a
 * handle idr's generation), which is then claim_finish()'s: false. */
static inline __attribute__((always_inline)) bool claim_fast(const struct idr *idr,
							     struct idr_node *leaf,
							     unsigned off, void *ptr)
{
	leaf->free &= ~((uint64_t)1 << off);
	if (__builtin_expect(!leaf->free || idr_kind(idr) != KIND_PLAIN, 0))
		return false;
	slot_store(&leaf->slots[off], ptr);
	return true;
}

/* claim_finish() for the hint's allocation of @index.  Out of line, as
 * alloc_by_walk() is. */
__attribute__((noinline)) static int64_t hint_finish(struct idr *idr, void *ptr,
						     uint64_t index)
{
	claim_finish(idr, ptr, idr->idr_hint, index);
	return (int64_t)(index + idr_origin(idr));
}

/* claim_finish() for alloc_in_dir()'s allocation of @index in @leaf, which
 * becomes the hint. */
__attribute__((noinline)) static int64_t dir_finish(struct idr *idr, void *ptr,
						    struct idr_node *leaf, uint64_t index,
						    uint64_t start)
{
	claim_finish(idr, ptr, leaf, index);
	hint_set(idr, &leaf->slots[index & NODE_MASK], index, start);
	return (int64_t)(index + idr_origin(idr));
}

/* An allocation the hint could not answer, from @min's own leaf when the
 * directory names it and it has room at or above @min (an allocation at a
 * given ID, or from one, away from the last): no walk, and, as the hint's,
 * no stack frame.  Else alloc_by_walk().  @min is at least the idr's base
 * and at most @max. */
__attribute__((noinline)) static int64_t alloc_in_dir(struct idr *idr, void *ptr,
						      uint64_t min, uint64_t max,
						      idr_gfp_t gfp)
{
	void **slot;

	if (dir_lookup_any(idr, min, &slot) != DIR_LEAF)
		return alloc_by_walk(idr, ptr, min, max, NULL, gfp);
	unsigned from = (unsigned)(min & NODE_MASK);
	struct idr_node *leaf = slot_leaf(slot, min);
	uint64_t base = min & ~(uint64_t)NODE_MASK;
	long off = leaf_room(leaf, base, from, max);
	if (off < 0)
		return alloc_by_walk(idr, ptr, min, max, NULL, gfp);
	uint64_t origin = idr_origin(idr), index = base + (uint64_t)off - origin;
	if (!claim_fast(idr, leaf, (unsigned)off, ptr))
		return dir_finish(idr, ptr, leaf, index, min - origin);
	hint_set(idr, &leaf->slots[off], index, min - origin);
	return (int64_t)(index + origin);
}

/* The lowest free ID in [@min, @max] (IDs, both inclusive), or a negative
 * errno: alloc_in_dir(), unless the leaf of the last allocation has it,
 * which it does for most. */
static inline __attribute__((always_inline)) int64_t
alloc_in_tree(struct idr *idr, void *ptr, uint64_t min, uint64_t max, idr_gfp_t gfp)
{
	uint64_t lo = min < idr->idr_base ? idr->idr_base : min;
	int off;

	if (lo > max)
		return -ENOSPC;
	if ((off = hint_offset(idr, lo, max)) < 0)
		return alloc_in_dir(idr, ptr, lo, max, gfp);
	struct idr_node *leaf = idr->idr_hint;
	uint64_t index = idr->idr_hint_base + (unsigned)off;
	if (!claim_fast(idr, leaf, (unsigned)off, ptr))
		return hint_finish(idr, ptr, index);
	return (int64_t)(index + idr_origin(idr));
}

/* The allocation of every idr_alloc*() call, inline in each: a call
 * between them and the hint costs a dense allocation a tenth of its time
 * on some hosts (bench/README.md). */
static inline __attribute__((always_inline)) int64_t
alloc_here(struct idr *idr, void *ptr, uint64_t min, uint64_t max, idr_gfp_t gfp)
{
	writer_enter(idr, "idr_alloc");
	int64_t id = alloc_in_tree(idr, ptr, min, max, gfp);
	writer_exit(idr);
	return id;
}

/* The old API's, with its reserve: always a walk, as it is the rare
 * caller.  @min at most @max. */
int64_t alloc_id(struct idr *idr, void *ptr, uint64_t min, uint64_t max,
		 struct node_pool *fixed)
{
	writer_enter(idr, "idr_alloc");
	int64_t id = alloc_by_walk(idr, ptr, min < idr->idr_base ? idr->idr_base : min, max,
				   fixed, IDR_GFP_NOWAIT);
	writer_exit(idr);
	return id;
}

static uint64_t max_id(int end)
{
	return end > 0 ? (uint64_t)end - 1 : INT_MAX;
}

/* IDs up to INT_MAX fit the int, and so do the errors. */
int idr_alloc(struct idr *idr, void *ptr, int start, int end, idr_gfp_t gfp)
{
	if (start < 0)
		return -EINVAL;
	return (int)alloc_here(idr, ptr, (uint64_t)start, max_id(end), gfp);
}

int idr_alloc_u32(struct idr *idr, void *ptr, uint32_t *nextid, uint32_t max,
		  idr_gfp_t gfp)
{
	int64_t id = alloc_here(idr, ptr, *nextid, max, gfp);

	if (id < 0)
		return (int)id;
	*nextid = (uint32_t)id;
	return 0;
}

int idr_alloc_cyclic(struct idr *idr, void *ptr, int start, int end,
		     idr_gfp_t gfp)
{
	uint64_t max = max_id(end);

	if (start < 0)
		return -EINVAL;
	unsigned cursor = idr_get_cursor(idr);
	uint64_t from = cursor > (unsigned)start ? cursor : (unsigned)start;
	int64_t id = alloc_here(idr, ptr, from, max, gfp);
	if (id == -ENOSPC && from > (unsigned)start)
		id = alloc_here(idr, ptr, (uint64_t)start, max, gfp);
	if (id < 0)
		return (int)id;
	idr_set_cursor(idr, (unsigned)id + 1);
	return (int)id;
}

/* @id's index, or INDEX_NONE if no index can hold it. */
static uint64_t index_of(const struct idr *idr, unsigned long id)
{
	if (id < idr->idr_base || id - idr_origin(idr) > UINT32_MAX)
		return INDEX_NONE;
	return id - idr_origin(idr);
}

/* One level down @index's path, or NULL out of idr_find(). */
#define DESCEND(shift)                                                        \
	do {                                                                  \
		node = slot_load(&node->slots[(index >> (shift)) & NODE_MASK]); \
		if (!node)                                                    \
			return NULL;                                          \
	} while (0)

/* The slot of @index in leaf-level @word: sparse, full or absent. */
static inline void *leaf_find(const void *word, uint64_t index)
{
	if (__builtin_expect(is_sparse(word), 0))
		return sparse_find(word, (unsigned)(index & NODE_MASK));
	if (!word)
		return NULL;
	return slot_load(&((const struct idr_node *)word)->slots[index & NODE_MASK]);
}

/* Down the tree, unrolled by height: a loop over the levels costs a third
 * more per lookup than the loads themselves (make bench).  Heights 1 and
 * 2, every small idr, are tested before the switch, whose jump cost them 6
 * instructions a lookup (callgrind).  Sparse leaves exist only at the leaf
 * level, so only the last step of each height asks leaf_find(). */
__attribute__((noinline)) static void *tree_find(const struct idr *idr, uint64_t index)
{
	uintptr_t root = root_load(idr);
	unsigned h = root_height(root);
	const struct idr_node *node = root_node(root);

	if (index >> (NODE_BITS * h))
		return NULL;
	/* index fits below the height: no masks needed. */
	if (h == 2)
		return leaf_find(slot_load(&node->slots[index >> NODE_BITS]), index);
	if (h == 1)
		return slot_load(&node->slots[index]);
	switch (h) {
	case 6:
		DESCEND(5 * NODE_BITS);
		__attribute__((fallthrough));
	case 5:
		DESCEND(4 * NODE_BITS);
		__attribute__((fallthrough));
	case 4:
		DESCEND(3 * NODE_BITS);
		__attribute__((fallthrough));
	case 3:
		DESCEND(2 * NODE_BITS);
		return leaf_find(slot_load(&node->slots[(index >> NODE_BITS) & NODE_MASK]),
				 index);
	default:
		return NULL; /* empty */
	}
}

/* Where a keyed directory does not answer: a span directory, else the
 * tree.  An ID below the origin wraps to an index no tree reaches.  A
 * whole lookup in itself, whatever the directory's state: the inline
 * idr_find() calls it when the directory it read did not answer. */
__attribute__((noinline)) void *idr__find_slow(const struct idr *idr, unsigned long id)
{
	void **slot;
	enum dir_answer a = dir_lookup_any(idr, id, &slot);

	if (a != DIR_ASK_TREE)
		return a == DIR_LEAF ? slot_load(slot) : NULL;
	return tree_find(idr, id - idr_origin(idr));
}

/* The library's idr_find(), for callers built without the header's inline
 * one: the same fast path (idr.h), with no stack frame and no register
 * copies: random lookups are bound by how much work each carries
 * (bench/README.md). */
void *idr_find(const struct idr *idr, unsigned long id)
{
	return idr__find_fast(idr, id);
}

void *idr_remove(struct idr *idr, unsigned long id)
{
	uint64_t index = index_of(idr, id);
	void *old = NULL;

	writer_enter(idr, "idr_remove");
	if (index != INDEX_NONE)
		old = tree_take(idr, index);
	writer_exit(idr);
	return old;
}

void *idr_replace(struct idr *idr, void *ptr, unsigned long id)
{
	uint64_t index = index_of(idr, id);
	void *old = IDR_ERR_PTR(-ENOENT);

	writer_enter(idr, "idr_replace");
	if (index != INDEX_NONE)
		old = tree_replace(idr, index, ptr);
	writer_exit(idr);
	return old;
}

/* Through the directory, the first non-NULL entry at or after ID @id in
 * @id's leaf: DIR_LEAF with *@found and *@entry set; DIR_NO_LEAF if that
 * leaf has none there (or does not exist); DIR_ASK_TREE if the directory
 * cannot tell.  A dense idr's idr_for_each_entry() then costs a scan of
 * the leaf per entry, not a walk from the root. */
static inline __attribute__((always_inline)) enum dir_answer
next_in_leaf(const struct idr *idr, uint64_t id, uint64_t *found, void **entry)
{
	void **slot;
	enum dir_answer a = dir_lookup_any(idr, id, &slot);
	unsigned from = (unsigned)(id & NODE_MASK), off;

	if (a != DIR_LEAF)
		return a;
	if (!leaf_next(slot - from, from, &off, entry))
		return DIR_NO_LEAF;
	*found = id - from + off;
	return DIR_LEAF;
}

/* The first non-NULL entry at or after ID @id and at most ID @last: its ID
 * in *@found, or INDEX_NONE if there is none.  Leaves start at multiples of
 * 64 IDs, so a leaf found through the directory ends at or below @last
 * when @last + 1 is one too (INT_MAX and UINT32_MAX). */
static void *next_entry(const struct idr *idr, uint64_t id, uint64_t last,
			uint64_t *found)
{
	void *entry = NULL;
	uint64_t origin = idr_origin(idr);
	uint64_t start = id < origin ? 0 : id - origin;

	switch (next_in_leaf(idr, start + origin, found, &entry)) {
	case DIR_LEAF:
		return entry;
	case DIR_NO_LEAF:
		start = (start | NODE_MASK) + 1;
		break;
	case DIR_ASK_TREE:
		break;
	}
	uint64_t index = tree_next_entry(idr, start, last - origin, &entry);
	if (index == INDEX_NONE)
		return NULL;
	*found = index + origin;
	return entry;
}

/* idr_get_next() and _ul()'s common case, inline in each: the entry the
 * directory's leaf for @id holds at or after @id, its ID in *@found; NULL
 * if that leaf cannot tell.  Everything else is a call made last, so that
 * idr_for_each_entry() pays no stack frame per entry (each instruction
 * costs: bench/README.md). */
static inline void *next_here(const struct idr *idr, uint64_t id, uint64_t *found)
{
	void *entry = NULL;

	if (id < idr_origin(idr) || next_in_leaf(idr, id, found, &entry) != DIR_LEAF)
		return NULL;
	return entry;
}

__attribute__((noinline)) static void *get_next_walk(const struct idr *idr, int *nextid)
{
	uint64_t found;
	void *entry = next_entry(idr, (uint64_t)*nextid, INT_MAX, &found);

	if (entry)
		*nextid = (int)found;
	return entry;
}

__attribute__((noinline)) static void *get_next_ul_walk(const struct idr *idr,
							 unsigned long *nextid)
{
	uint64_t found;
	void *entry = next_entry(idr, *nextid, UINT32_MAX, &found);

	if (entry)
		*nextid = (unsigned long)found;
	return entry;
}

void *idr_get_next(const struct idr *idr, int *nextid)
{
	uint64_t found;
	void *entry;

	if (*nextid < 0)
		return NULL;
	if (!(entry = next_here(idr, (uint64_t)*nextid, &found)))
		return get_next_walk(idr, nextid);
	*nextid = (int)found;
	return entry;
}

void *idr_get_next_ul(const struct idr *idr, unsigned long *nextid)
{
	uint64_t found;
	void *entry;

	if (*nextid > UINT32_MAX)
		return NULL;
	if (!(entry = next_here(idr, *nextid, &found)))
		return get_next_ul_walk(idr, nextid);
	*nextid = (unsigned long)found;
	return entry;
}

int idr_for_each(const struct idr *idr, int (*fn)(int id, void *p, void *data),
		 void *data)
{
	return tree_for_each(idr, fn, data);
}

bool idr_is_empty(const struct idr *idr)
{
	return root_load(idr) == 0;
}

unsigned int idr_get_cursor(const struct idr *idr)
{
	return __atomic_load_n(&idr->idr_next, __ATOMIC_RELAXED);
}

void idr_set_cursor(struct idr *idr, unsigned int val)
{
	__atomic_store_n(&idr->idr_next, val, __ATOMIC_RELAXED);
}

size_t idr_memory_usage(const struct idr *idr)
{
	return tree_memory(idr) + dir_memory(idr);
}
