/* SPDX-License-Identifier: MIT */
/*
 * Generation-checked handles (IDR_F_HANDLES).
 *
 * Each slot of a handle idr's leaves has a 32-bit generation beside it,
 * written when its ID is allocated: the next tick of the idr's allocation
 * clock.  A handle is (generation << 32 | ID) and is current while the slot
 * still holds that generation.
 *
 * Why a clock and not a per-slot counter bumped on free: a counter would
 * die with its leaf when the leaf empties and is freed, and any value
 * chosen for the rebuilt leaf could collide with handles still held.  The
 * clock needs no memory of freed leaves: every allocation gets a value no
 * allocation of the last 2^32 - 1 got, whatever the tree did meanwhile.
 * Tick 0 is skipped so that 0 is never a valid handle.
 *
 * Why a lockless find-by-handle cannot return the wrong object: the writer
 * stores the new generation before it publishes the pointer (a release
 * store), and the reader loads the pointer (acquire) before the generation.
 * A reader that sees the new object therefore sees its new generation and
 * rejects an old handle; a reader that sees the old object may return it,
 * which is what it would have got just before the removal.
 */
#include "internal.h"

void stamp_generation(struct idr *idr, void **slot, uint64_t index)
{
	unsigned tick = idr->idr_clock + 1;

	if (!tick)
		tick = 1;
	idr->idr_clock = tick;
	__atomic_store_n(&node_gens(slot_leaf(slot, index))[index & NODE_MASK],
			 tick, __ATOMIC_RELAXED);
}

static bool has_handles(const struct idr *idr)
{
	return idr_kind(idr) == KIND_GEN;
}

/* @id's leaf, reader-safe; NULL if no leaf covers it.  The directory
 * first, as idr_find() does: a dense idr's lookups then read neither the
 * root nor the height.  An ID below the base needs no test of its own: its
 * leaf, if any, is the base's, where it is never allocated (free). */
static struct idr_node *find_leaf(const struct idr *idr, uint64_t id)
{
	void **slot;

	switch (dir_lookup_any(idr, id, &slot)) {
	case DIR_LEAF:
		return slot_leaf(slot, id);
	case DIR_NO_LEAF:
		return NULL;
	case DIR_ASK_TREE:
		break;
	}
	uintptr_t root = root_load(idr);
	unsigned h = root_height(root);
	uint64_t index = id - idr_origin(idr);

	if (!h || index >= span(h))
		return NULL;
	struct idr_node *node = root_node(root);
	for (unsigned shift = NODE_BITS * (h - 1); node && shift;
	     shift -= NODE_BITS)
		node = slot_load(&node->slots[(index >> shift) & NODE_MASK]);
	return node;
}

/* Writer side: is @handle's ID allocated in the generation it names?  (A
 * generation of 0 never is: idr_handle_of() returns 0 for "none".) */
static bool current(const struct idr *idr, idr_handle_t handle)
{
	return idr_handle_gen(handle) &&
	       idr_handle_of(idr, idr_handle_id(handle)) == handle;
}

int idr_alloc_handle(struct idr *idr, void *ptr, int start, int end,
		     idr_gfp_t gfp, idr_handle_t *handle)
{
	if (!has_handles(idr))
		return -EINVAL;
	int id = idr_alloc(idr, ptr, start, end, gfp);
	/* The tick just stamped on the new slot: no lookup of what the
	 * writer, which holds the lock, has just written. */
	if (id >= 0)
		*handle = idr_handle_make((uint32_t)id, idr->idr_clock);
	return id;
}

void *idr_find_handle(const struct idr *idr, idr_handle_t handle)
{
	uint64_t id = idr_handle_id(handle);
	struct idr_node *leaf;

	if (!has_handles(idr) || !(leaf = find_leaf(idr, id)))
		return NULL;
	unsigned off = (unsigned)(id & NODE_MASK);
	void *ptr = slot_load(&leaf->slots[off]);
	uint32_t gen = __atomic_load_n(&node_gens(leaf)[off], __ATOMIC_RELAXED);
	return gen == idr_handle_gen(handle) ? ptr : NULL;
}

void *idr_remove_handle(struct idr *idr, idr_handle_t handle)
{
	if (!current(idr, handle))
		return NULL;
	return idr_remove(idr, idr_handle_id(handle));
}

void *idr_replace_handle(struct idr *idr, void *ptr, idr_handle_t handle)
{
	if (!current(idr, handle))
		return IDR_ERR_PTR(-ENOENT);
	return idr_replace(idr, ptr, idr_handle_id(handle));
}

idr_handle_t idr_handle_of(const struct idr *idr, unsigned long id)
{
	struct idr_node *leaf;

	if (!has_handles(idr) || id > UINT32_MAX || !(leaf = find_leaf(idr, id)))
		return 0;
	unsigned off = (unsigned)(id & NODE_MASK);
	if (leaf->free >> off & 1)
		return 0;
	return idr_handle_make((uint32_t)id, node_gens(leaf)[off]);
}
