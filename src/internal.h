/* SPDX-License-Identifier: MIT */
/* Private interfaces shared by the files in src/.  See docs/design.md. */
#ifndef IDR_INTERNAL_H
#define IDR_INTERNAL_H

#include <stdint.h>
#include <urcu-bp.h>
#include <urcu/call-rcu.h>

#include "idr.h"

#define IDR_HIDDEN __attribute__((visibility("hidden")))

#define NODE_BITS 6
#define NODE_SLOTS (1u << NODE_BITS)
#define NODE_MASK (NODE_SLOTS - 1)
/* 6 levels of 6 bits cover 36 bits: every u32 index. */
#define MAX_HEIGHT 6
#define HEIGHT_MASK ((uintptr_t)7)

/*
 * A tree node: 64 slots and a free bitmap, 536 bytes, so a dense leaf costs
 * 8.4 bytes per ID.  Lockless readers only ever load slots[] (and the root);
 * every other field is the writer's alone, which is why a node needs no
 * shift/height field (the height comes with the root) and why the rcu_head
 * may overlay writer-only state once the node has left the tree.
 *
 * free bit i: in a leaf, index i is not allocated; in an interior node,
 * child i is absent or has a free index somewhere below it.
 */
struct idr_node {
	void *slots[NODE_SLOTS];
	uint64_t free;
	union {
		uint64_t children; /* interior: bit i set iff slots[i] != NULL */
		struct rcu_head rcu; /* once unlinked and waiting to be freed */
	};
};

/*
 * Two kinds of node, told apart by the idr that owns them: plain, and for
 * IDR_F_HANDLES idrs, followed by each slot's 32-bit generation.  Every node
 * of a handle idr has the array (interior ones leave it unused), so the
 * stash and the pools only ever need to know the kind, never the level.
 */
enum node_kind { KIND_PLAIN, KIND_GEN, NODE_KINDS };

static inline enum node_kind idr_kind(const struct idr *idr)
{
	return idr->idr_flags & IDR_F_HANDLES ? KIND_GEN : KIND_PLAIN;
}

static inline size_t kind_bytes(enum node_kind kind)
{
	return sizeof(struct idr_node) +
	       (kind == KIND_GEN ? NODE_SLOTS * sizeof(uint32_t) : 0);
}

static inline uint32_t *node_gens(struct idr_node *n)
{
	return (uint32_t *)(n + 1);
}

/* Relaxed/acquire/release accessors: every shared word goes through them so
 * that a reader racing a writer sees whole pointers (and TSan agrees). */
static inline void *slot_load(void *const *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline void slot_store(void **p, void *v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline uintptr_t root_load(const struct idr *idr)
{
	return (uintptr_t)__atomic_load_n(&idr->idr_root, __ATOMIC_ACQUIRE);
}
static inline struct idr_node *root_node(uintptr_t root)
{
	return (struct idr_node *)(root & ~HEIGHT_MASK);
}
static inline unsigned root_height(uintptr_t root)
{
	return (unsigned)(root & HEIGHT_MASK);
}
/* Number of indices a subtree of @height levels covers. */
static inline uint64_t span(unsigned height)
{
	return (uint64_t)1 << (NODE_BITS * height);
}

#define INDEX_NONE UINT64_MAX

/* An ida leaf slot points at a bitmap of this many IDs. */
#define IDA_CHUNK_BITS 10
#define IDA_CHUNK_IDS (1u << IDA_CHUNK_BITS)
#define IDA_CHUNK_WORDS (IDA_CHUNK_IDS / 64)

/* Nodes obtained up front for one insertion, so it cannot fail halfway. */
struct node_pool {
	struct idr_node *node[IDR_PRELOAD_NODES];
	unsigned count;
	unsigned from_stash;
	enum node_kind kind;
};

/* tree.c */
IDR_HIDDEN uint64_t tree_find_free(const struct idr *idr, uint64_t start);
IDR_HIDDEN unsigned tree_nodes_needed(const struct idr *idr, uint64_t index);
IDR_HIDDEN void **tree_insert(struct idr *idr, uint64_t index,
			      struct node_pool *pool, bool full);
IDR_HIDDEN void **tree_lookup_slot(const struct idr *idr, uint64_t index,
				   struct idr_node **leaf);
IDR_HIDDEN void tree_mark_full(struct idr *idr, uint64_t index);
IDR_HIDDEN void tree_mark_free(struct idr *idr, uint64_t index);
IDR_HIDDEN bool tree_is_free(const struct idr *idr, uint64_t index);
IDR_HIDDEN void tree_release(struct idr *idr, uint64_t index);
IDR_HIDDEN void tree_destroy(struct idr *idr, void (*leaf_fn)(void *entry));
IDR_HIDDEN uint64_t tree_next_entry(const struct idr *idr, uint64_t index,
				    uint64_t last, void **entry);

/* The leaf that holds @slot, the leaf slot of @index. */
static inline struct idr_node *slot_leaf(void **slot, uint64_t index)
{
	return (struct idr_node *)(void *)(slot - (index & NODE_MASK));
}

/* handle.c */
IDR_HIDDEN void stamp_generation(struct idr *idr, void **slot, uint64_t index);

/* idr.c, compat.c */
IDR_HIDDEN int alloc_id(struct idr *idr, void *ptr, uint64_t min, uint64_t max,
			struct node_pool *fixed, uint64_t *id);
IDR_HIDDEN void compat_drain(struct idr *idr);

/* Writer-side counter updates that lockless snapshots may read. */
static inline void count_add(size_t *counter, long delta)
{
	__atomic_store_n(counter,
			 __atomic_load_n(counter, __ATOMIC_RELAXED) + (size_t)delta,
			 __ATOMIC_RELAXED);
}

/*
 * Debug builds (-DIDR_DEBUG) catch two writers inside one idr at once, the
 * misuse that corrupts a tree silently: each writer entry point counts
 * itself in and out, and an overlap is reported, then aborts.  Release
 * builds compile this away.
 */
#ifdef IDR_DEBUG
IDR_HIDDEN void writer_overlap(const char *func);
static inline void writer_enter(struct idr *idr, const char *func)
{
	if (__atomic_fetch_add(&idr->idr_writers, 1, __ATOMIC_ACQUIRE))
		writer_overlap(func);
}
static inline void writer_exit(struct idr *idr)
{
	__atomic_fetch_sub(&idr->idr_writers, 1, __ATOMIC_RELEASE);
}
#else
static inline void writer_enter(struct idr *idr, const char *func)
{
	(void)idr;
	(void)func;
}
static inline void writer_exit(struct idr *idr)
{
	(void)idr;
}
#endif

/* preload.c: the allocator hook, the per-thread stash, diagnostics */
IDR_HIDDEN void *mem_alloc(size_t size);
IDR_HIDDEN void mem_free(void *p, size_t size);
IDR_HIDDEN int pool_fill(struct node_pool *pool, enum node_kind kind,
			 unsigned need);
IDR_HIDDEN void stock_kind(enum node_kind kind);
IDR_HIDDEN void pool_return(struct node_pool *pool);
IDR_HIDDEN struct idr_node *pool_take(struct node_pool *pool);
IDR_HIDDEN void report(const char *func, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* rcu.c */
IDR_HIDDEN void node_retire(struct idr *idr, struct idr_node *node);
IDR_HIDDEN void subtree_retire(struct idr *idr, struct idr_node *node,
			       unsigned height);
IDR_HIDDEN void subtree_free(struct idr_node *node, unsigned height,
			     enum node_kind kind, void (*leaf_fn)(void *entry));

#endif /* IDR_INTERNAL_H */
