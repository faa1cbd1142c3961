/* SPDX-License-Identifier: MIT */
/*
 * Sparse leaves: what a leaf-level slot holds when its 64 IDs are mostly
 * free, so that scattered IDs cost words, not 520-byte leaves.
 *
 *   singleton  one entry in the slot word itself: the pointer, with its
 *              offset in the top byte and tag 11 in the bottom bits.  Only
 *              for pointers that leave those bits clear (4-byte aligned,
 *              top byte zero: every malloc'ed or static object on the
 *              64-bit systems libidr runs on); others, and NULL
 *              reservations, take a compact leaf.
 *   compact    a 56-byte leaf of CLEAF_CAP lanes, each an (offset, pointer)
 *              pair, tag 01.
 *
 * A leaf changes form as it fills and empties.  New leaves whose first ID is
 * neither their offset 0 nor the idr's base start sparse: dense allocation
 * always enters a new leaf there, so it builds full leaves from the start.
 * A compact leaf becomes a full leaf at its (CLEAF_CAP+1)-th entry; a full
 * leaf becomes compact again when removals leave it CLEAF_CAP entries or
 * fewer, and a compact leaf with one entry becomes a singleton.  Those
 * removal-time changes are economies, not duties: if the allocator fails,
 * the leaf simply keeps its form.
 *
 * Lockless readers and the lanes: a writer fills a lane's pointer before it
 * publishes the lane's offset (release), and empties the offset before the
 * pointer.  A reader loads the lanes, the pointer, then the lanes again and
 * keeps the pointer only if its lane still names the same offset: a lane
 * reused for another ID in between changed its offset, so the reader looks
 * again.  Replaced compact leaves are never written again (their rcu_head is
 * their own), so a reader that still holds one reads a consistent past
 * state until the grace period ends.
 */
#include "internal.h"

bool sparse_allowed(const struct idr *idr)
{
	return idr_kind(idr) == KIND_PLAIN;
}

/* Can a singleton word hold @ptr? */
static bool can_single(const void *ptr)
{
#if WIDE_POINTERS
	return !((uintptr_t)ptr & TAG_MASK) && !((uintptr_t)ptr >> SINGLE_SHIFT);
#else
	(void)ptr;
	return false; /* no spare byte in a 32-bit word */
#endif
}

/* Should a new entry @ptr start a singleton?  Not a NULL reservation: it
 * is usually replaced by the real object soon, and only a compact lane
 * takes any pointer in place, without memory. */
bool prefer_single(const void *ptr)
{
	return ptr && can_single(ptr);
}

static void *single_word(unsigned off, void *ptr)
{
	return (void *)(uintptr_t)((uintptr_t)ptr | (uint64_t)off << SINGLE_SHIFT | TAG_SINGLE);
}

static struct cleaf *cleaf_of(const void *word)
{
	return (struct cleaf *)((uintptr_t)word & ~TAG_MASK);
}

static void *cleaf_word(struct cleaf *c)
{
	return (void *)((uintptr_t)c | TAG_COMPACT);
}

static unsigned lane_off(uint64_t lanes, unsigned lane)
{
	return (unsigned)(lanes >> (8 * lane)) & 0xff;
}

static uint64_t lane_with(uint64_t lanes, unsigned lane, unsigned off)
{
	return (lanes & ~((uint64_t)0xff << (8 * lane))) | (uint64_t)off << (8 * lane);
}

static int lane_of(uint64_t lanes, unsigned off)
{
	for (unsigned lane = 0; lane < CLEAF_CAP; lane++)
		if (lane_off(lanes, lane) == off)
			return (int)lane;
	return -1;
}

static uint64_t lanes_load(const struct cleaf *c)
{
	return __atomic_load_n(&c->lanes, __ATOMIC_ACQUIRE);
}

static void lanes_store(struct cleaf *c, uint64_t lanes)
{
	__atomic_store_n(&c->lanes, lanes, __ATOMIC_RELEASE);
}

/* The offsets a sparse word holds, as a bitmap (writer side). */
uint64_t sparse_taken(const void *word)
{
	if (is_single(word))
		return (uint64_t)1 << single_off(word);
	uint64_t lanes = cleaf_of(word)->lanes, taken = 0;
	for (unsigned lane = 0; lane < CLEAF_CAP; lane++)
		if (lane_off(lanes, lane) != LANE_FREE)
			taken |= (uint64_t)1 << lane_off(lanes, lane);
	return taken;
}

/* Reader side: lane @lane's pointer, if the lane still holds @off. */
static bool lane_read(const struct cleaf *c, unsigned lane, unsigned off,
		      void **ptr)
{
	*ptr = slot_load(&c->ptr[lane]);
	return lane_off(lanes_load(c), lane) == off;
}

void *sparse_find(const void *word, unsigned off)
{
	if (is_single(word))
		return single_off(word) == off ? single_ptr(word) : NULL;
	const struct cleaf *c = cleaf_of(word);
	for (;;) {
		int lane = lane_of(lanes_load(c), off);
		void *ptr;
		if (lane < 0)
			return NULL;
		if (lane_read(c, (unsigned)lane, off, &ptr))
			return ptr;
	}
}

/* Reader side: sparse_next() (internal.h) for a compact leaf. */
bool cleaf_next(const void *word, unsigned from, unsigned *off, void **entry)
{
	const struct cleaf *c = cleaf_of(word);

	while (from < NODE_SLOTS) {
		uint64_t lanes = lanes_load(c);
		unsigned best = NODE_SLOTS, best_lane = 0;
		for (unsigned lane = 0; lane < CLEAF_CAP; lane++) {
			unsigned o = lane_off(lanes, lane);
			if (o != LANE_FREE && o >= from && o < best) {
				best = o;
				best_lane = lane;
			}
		}
		if (best == NODE_SLOTS)
			return false;
		if (!lane_read(c, best_lane, best, entry))
			continue; /* the lane moved on: look again */
		if (*entry) {
			*off = best;
			return true;
		}
		from = best + 1; /* a NULL reservation: iteration skips it */
	}
	return false;
}

bool sparse_get(const void *word, unsigned off, void **value)
{
	if (is_single(word)) {
		*value = single_ptr(word);
		return single_off(word) == off;
	}
	const struct cleaf *c = cleaf_of(word);
	int lane = lane_of(c->lanes, off);
	if (lane < 0)
		return false;
	*value = c->ptr[lane];
	return true;
}

/* Does adding an entry to @word turn it into a full leaf? */
bool sparse_needs_full(const void *word)
{
	return !is_single(word) && lane_of(cleaf_of(word)->lanes, LANE_FREE) < 0;
}

/* @c, new to the tree, holding (@off, @ptr) in its first lane only. */
static struct cleaf *cleaf_init(struct idr *idr, struct cleaf *c, unsigned off,
				void *ptr)
{
	c->lanes = ~(uint64_t)0; /* every lane LANE_FREE */
	for (unsigned lane = 0; lane < CLEAF_CAP; lane++)
		c->ptr[lane] = NULL;
	c->ptr[0] = ptr;
	c->lanes = lane_with(c->lanes, 0, off);
	count_add(&idr->idr_sparse, 1);
	return c;
}

/* A new leaf whose only entry is (@off, @ptr).  A compact one comes from
 * @pool when @ptr cannot be a singleton (tree_needs() said so). */
void sparse_new(struct idr *idr, struct leaf_ref ref, unsigned off, void *ptr,
		struct node_pool *pool)
{
	if (prefer_single(ptr)) {
		leaf_store(idr, ref, single_word(off, ptr));
		return;
	}
	leaf_store(idr, ref, cleaf_word(cleaf_init(idr, pool_take_cleaf(pool), off, ptr)));
}

/* A full leaf (from @pool) holding the sparse leaf's entries, published
 * in its place.  Returns the new leaf. */
struct idr_node *sparse_to_full(struct idr *idr, struct leaf_ref ref,
				struct node_pool *pool)
{
	struct idr_node *leaf = node_new(idr, pool);
	void *word = *ref.slot;

	if (is_single(word)) {
		leaf->slots[single_off(word)] = single_ptr(word);
		leaf->free &= ~((uint64_t)1 << single_off(word));
	} else {
		struct cleaf *c = cleaf_of(word);
		for (unsigned lane = 0; lane < CLEAF_CAP; lane++) {
			unsigned o = lane_off(c->lanes, lane);
			if (o == LANE_FREE)
				continue;
			leaf->slots[o] = c->ptr[lane];
			leaf->free &= ~((uint64_t)1 << o);
		}
	}
	leaf_store(idr, ref, leaf);
	if (!is_single(word))
		cleaf_retire(idr, cleaf_of(word));
	return leaf;
}

/* Add (@off, @ptr) to the sparse leaf in @ref, changing its form as
 * needed with what tree_needs() put in @pool. */
void sparse_insert(struct idr *idr, struct leaf_ref ref, unsigned off, void *ptr,
		   struct node_pool *pool)
{
	void *word = *ref.slot;

	if (is_single(word)) {
		struct cleaf *c = cleaf_init(idr, pool_take_cleaf(pool),
					     single_off(word), single_ptr(word));
		c->ptr[1] = ptr;
		c->lanes = lane_with(c->lanes, 1, off);
		leaf_store(idr, ref, cleaf_word(c));
		return;
	}
	struct cleaf *c = cleaf_of(word);
	int lane = lane_of(c->lanes, LANE_FREE);
	if (lane < 0) {
		struct idr_node *leaf = sparse_to_full(idr, ref, pool);
		leaf->free &= ~((uint64_t)1 << off);
		slot_store(&leaf->slots[off], ptr);
		return;
	}
	slot_store(&c->ptr[lane], ptr);
	lanes_store(c, lane_with(c->lanes, (unsigned)lane, off));
}

/* Replace the value of allocated @off.  Only a singleton given a pointer
 * it cannot hold (odd, or with its top byte set: never a malloc'ed one)
 * needs memory: -ENOMEM if the allocator has none, and nothing changes. */
int sparse_set(struct idr *idr, struct leaf_ref ref, unsigned off, void *ptr)
{
	void *word = *ref.slot;

	if (!is_single(word)) {
		struct cleaf *c = cleaf_of(word);
		slot_store(&c->ptr[lane_of(c->lanes, off)], ptr);
		return 0;
	}
	if (can_single(ptr)) {
		leaf_store(idr, ref, single_word(off, ptr));
		return 0;
	}
	struct cleaf *c = mem_alloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	leaf_store(idr, ref, cleaf_word(cleaf_init(idr, c, off, ptr)));
	return 0;
}

/* Remove allocated @off.  Returns true if the leaf is gone (the slot is
 * NULL now), for the caller to update the parent. */
bool sparse_remove(struct idr *idr, struct leaf_ref ref, unsigned off)
{
	void *word = *ref.slot;

	if (is_single(word)) {
		leaf_store(idr, ref, NULL);
		return true;
	}
	struct cleaf *c = cleaf_of(word);
	unsigned lane = (unsigned)lane_of(c->lanes, off);
	lanes_store(c, lane_with(c->lanes, lane, LANE_FREE));
	slot_store(&c->ptr[lane], NULL);
	uint64_t left = sparse_taken(word);
	if (left & (left - 1))
		return false; /* two or more entries stay */
	if (left) {
		unsigned o = (unsigned)__builtin_ctzll(left);
		void *p = c->ptr[lane_of(c->lanes, o)];
		if (!can_single(p))
			return false;
		leaf_store(idr, ref, single_word(o, p));
	} else {
		leaf_store(idr, ref, NULL);
	}
	cleaf_retire(idr, c);
	return !left;
}

/* The full leaf in @ref has CLEAF_CAP entries or fewer: give it a sparse
 * form if memory allows. */
void sparse_demote(struct idr *idr, struct leaf_ref ref)
{
	struct idr_node *leaf = *ref.slot;
	uint64_t taken = ~leaf->free;
	unsigned first = (unsigned)__builtin_ctzll(taken);

	if (!(taken & (taken - 1)) && can_single(leaf->slots[first])) {
		leaf_store(idr, ref, single_word(first, leaf->slots[first]));
		node_retire(idr, leaf);
		return;
	}
	struct cleaf *c = mem_alloc(sizeof(*c));
	if (!c)
		return;
	cleaf_init(idr, c, first, leaf->slots[first]);
	taken &= taken - 1;
	for (unsigned lane = 1; taken; lane++, taken &= taken - 1) {
		unsigned o = (unsigned)__builtin_ctzll(taken);
		c->ptr[lane] = leaf->slots[o];
		c->lanes = lane_with(c->lanes, lane, o);
	}
	leaf_store(idr, ref, cleaf_word(c));
	node_retire(idr, leaf);
}

/* Free a sparse word's memory at once (a detached tree being freed). */
void sparse_free(void *word)
{
	if (!is_single(word))
		mem_free(cleaf_of(word), sizeof(struct cleaf));
}
