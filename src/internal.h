/* SPDX-License-Identifier: MIT */
/* Private interfaces shared by the files in src/.  See docs/design.md. */
#ifndef IDR_INTERNAL_H
#define IDR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <urcu-bp.h>
#include <urcu/call-rcu.h>

/* The library defines the out-of-line idr_find(), idr_lock(), idr_preload()
 * and friends that callers built without idr.h's inline ones call. */
#define IDR_NO_INLINE
#include "idr.h"

#define IDR_HIDDEN __attribute__((visibility("hidden")))

/* Pointers have 64 bits, so a word has bits to spare beside an address
 * (usable in #if as in code). */
#define WIDE_POINTERS (UINTPTR_MAX > 0xffffffffu)

/* Builds with -DIDR_TEST_HOOKS (tests/hooks.sh only) have two hooks; other
 * builds have none.  idr_test_window_hook, when set, is called inside the
 * window that idr_fork_prepare() must not fork in: a batch of frees taken
 * and not yet queued (src/rcu.c).  idr_test_membarrier_hook, when set,
 * answers src/lock.c's membarrier() calls in the system call's place. */
#ifdef IDR_TEST_HOOKS
extern void (*idr_test_window_hook)(void);
extern long (*idr_test_membarrier_hook)(int cmd);
#define TEST_WINDOW()                                                       \
	do {                                                                \
		if (idr_test_window_hook)                                   \
			idr_test_window_hook();                             \
	} while (0)
#else
#define TEST_WINDOW() ((void)0)
#endif

#define NODE_BITS 6
#define NODE_SLOTS (1u << NODE_BITS)
#define NODE_MASK (NODE_SLOTS - 1)
/* 6 levels of 6 bits cover 36 bits: every u32 index. */
#define MAX_HEIGHT 6
#define HEIGHT_MASK ((uintptr_t)7)

/*
 * A tree node: 64 slots and a free bitmap, 520 bytes, the most malloc fits
 * in a 528-byte chunk, so a dense leaf costs 8.1 bytes per ID.  Lockless
 * readers only ever load slots[] (and the root); the bitmap is the
 * writer's alone, which is why a node needs no shift/height field (the
 * height comes with the root), and why, once the node has left the tree,
 * the bitmap's word may link it into a batch waiting for a grace period
 * (rcu.c): a node has no rcu_head of its own.
 *
 * free bit i: in a leaf, index i is not allocated; in an interior node,
 * child i is absent or has a free index somewhere below it.  Which children
 * an interior node has is read from its slots (node_edge_child()): no
 * bitmap keeps it, the paths that ask being rare.
 */
struct idr_node {
	void *slots[NODE_SLOTS];
	uint64_t free;
};

/* The lowest (with @highest, the highest) slot of @n that holds a child
 * (in an ida leaf, a bitmap), or -1 if none does.  An idr leaf may also
 * hold allocated NULL entries: its free bitmap tells of those. */
static inline int node_edge_child(const struct idr_node *n, bool highest)
{
	for (unsigned k = 0; k < NODE_SLOTS; k++) {
		unsigned i = highest ? NODE_MASK - k : k;
		if (n->slots[i])
			return (int)i;
	}
	return -1;
}

/* Nothing allocated in @n and nothing below it: it can go. */
static inline bool node_unused(const struct idr_node *n)
{
	return n->free == ~(uint64_t)0 && node_edge_child(n, false) < 0;
}

/* Is slot 0 @n's only child?  (A root like that is a level too many.) */
static inline bool only_first_child(const struct idr_node *n)
{
	return node_edge_child(n, true) == 0;
}

/*
 * Two kinds of node, told apart by the idr that owns them: plain, and for
 * IDR_F_HANDLES idrs, followed by each slot's 32-bit generation.  Every node
 * of a handle idr has the array (interior ones leave it unused), so the
 * stash and the pools only ever need to know the kind, never the level.
 */
enum node_kind { KIND_PLAIN, KIND_GEN, KIND_COMPACT, NODE_KINDS };

static inline enum node_kind idr_kind(const struct idr *idr)
{
	return idr->idr_flags & IDR_F_HANDLES ? KIND_GEN : KIND_PLAIN;
}

/*
 * Sparse leaves (src/sparse.c).  A leaf-level slot of a plain idr may hold,
 * instead of a full leaf node, a tagged word:
 *   ...00  a full leaf (or NULL)
 *   ...01  a compact leaf: up to CLEAF_CAP entries in lanes
 *   ...11  a singleton: one entry, its pointer and offset in the word itself
 * so an idr whose IDs are scattered costs a few words per ID, not 536 bytes
 * per leaf.  Node pointers are malloc-aligned, so the tags are free.
 */
#define CLEAF_CAP 4
#define LANE_FREE 0xffu
struct cleaf {
	uint64_t lanes;          /* byte i: offset held by lane i, or LANE_FREE */
	void *ptr[CLEAF_CAP];
	struct rcu_head rcu;     /* its own: readers may still be in lanes */
};

#define TAG_MASK ((uintptr_t)3)
#define TAG_COMPACT ((uintptr_t)1)
#define TAG_SINGLE ((uintptr_t)3)

static inline bool is_sparse(const void *leaf_word)
{
	return (uintptr_t)leaf_word & TAG_MASK;
}

/* A singleton's offset sits in the pointer's top byte.  A 32-bit pointer
 * has no byte to spare, so there are no singletons there (sparse.c); the
 * words are widened to 64 bits only so that this compiles for it. */
#define SINGLE_SHIFT 56

static inline bool is_single(const void *word)
{
	return ((uintptr_t)word & TAG_MASK) == TAG_SINGLE;
}

static inline unsigned single_off(const void *word)
{
	return (unsigned)((uint64_t)(uintptr_t)word >> SINGLE_SHIFT) & NODE_MASK;
}

static inline void *single_ptr(const void *word)
{
	return (void *)(uintptr_t)((uint64_t)(uintptr_t)word &
				   ~((~(uint64_t)0 << SINGLE_SHIFT) | TAG_MASK));
}

static inline size_t kind_bytes(enum node_kind kind)
{
	if (kind == KIND_COMPACT)
		return sizeof(struct cleaf);
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

/* Reader side: the first non-NULL entry of a full leaf's @slots at or
 * after offset @from, its offset in *@off. */
static inline bool leaf_next(void *const *slots, unsigned from, unsigned *off,
			     void **entry)
{
	for (unsigned o = from; o < NODE_SLOTS; o++)
		if ((*entry = slot_load(&slots[o])) != NULL) {
			*off = o;
			return true;
		}
	return false;
}

/*
 * Where indices count from: the first ID of the leaf the base is in.  The
 * tree then keeps no levels for the IDs below the base, and an ID's offset
 * in its leaf is its own low bits, so the lookup directory can be keyed by
 * ID (idr_find() loads no base).  Directory entry k is the leaf of IDs
 * [64k, 64k + 64): tree leaf k - dir_skip().
 */
static inline uint64_t idr_origin(const struct idr *idr)
{
	return idr->idr_base & ~(uint64_t)NODE_MASK;
}
static inline uint64_t dir_skip(const struct idr *idr)
{
	return idr_origin(idr) >> NODE_BITS;
}
/* The base's index: dense allocation starts there. */
static inline uint64_t base_index(const struct idr *idr)
{
	return idr->idr_base & NODE_MASK;
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

/*
 * The lookup directory (src/dir.c): for a dense idr, where each leaf is, so
 * idr_find() takes two dependent loads where the tree takes one per level.
 * Entry j stands for the leaf of IDs [64(first + j), 64(first + j) + 64).
 * A keyed directory starts at ID 0 (first == 0, keyed == cap), so
 * idr_find() indexes it by ID >> 6 with no subtraction; a span directory
 * (first > 0, keyed == 0) serves idrs whose IDs sit too far above 0 for a
 * keyed one to be worth its memory, through dir_lookup_any(), out of
 * line.  It is a copy the writer keeps in step with the tree; present only
 * at height 2 or more, and only while it is small beside the tree.  An
 * entry is a word: DIR_NONE (no leaf), DIR_TREE (a sparse word: ask the
 * tree), or the address of the leaf's slots less 8 bytes for each ID below
 * the leaf, so that ID id's slot is at entry + 8 * id: one scaled load,
 * with no base to load, no mask and no add (bench/README.md, "random
 * lookup").  A leaf's entry is even (its slots are malloc-aligned, and
 * 8 * 64 bytes a leaf keep it so), the marks odd: idr_find() tells a leaf
 * from both with one test.
 */
#define DIR_NONE ((uintptr_t)1)
#define DIR_TREE ((uintptr_t)3)
_Static_assert(offsetof(struct idr_node, slots) == 0,
	       "a directory entry locates a leaf's slots");
static inline bool dir_names_leaf(uintptr_t e)
{
	return !(e & 1);
}
/* A directory's entries come in steps of DIR_MIN_CAP.  Fuzz builds
 * (IDR_DIR_SMALL) take small steps of 3, so that no directory is the size
 * of a node: fuzz tells a refused directory, which fails no allocation,
 * from a refused node, which must, by the size that was asked for.  (On
 * 32-bit hosts, steps of 9: with 3, a directory could be a handle idr's
 * node's size.) */
#ifdef IDR_DIR_SMALL
#define DIR_MIN_CAP (WIDE_POINTERS ? 3 : 9)
#else
#define DIR_MIN_CAP 16 /* 128 bytes: lookups in an idr of 1,000 IDs take half the time */
#endif
struct leafdir {
	uint64_t first;          /* the leaf (ID >> 6) of entry 0 */
	size_t cap;              /* entries */
	/* Writer only, for dir_wanted(): */
	size_t named;            /* entries that name a leaf */
	size_t misses;           /* full leaves made since, that it has no entry for */
	size_t checked_at;       /* misses when a window was last weighed */
	size_t recheck_at;       /* tree bytes to look for one over every leaf at */
	struct rcu_head rcu;
	/* What idr.h's inline idr_find() reads, through idr_dir, which points
	 * at leaf[] (the ABI: docs/guarantees.md). */
	size_t keyed;            /* entries idr_find() may index by ID >> 6 */
	uintptr_t leaf[];
};
_Static_assert(offsetof(struct leafdir, leaf) ==
		       offsetof(struct leafdir, keyed) + sizeof(uintptr_t),
	       "idr_find() inline reads keyed just before the entries");
_Static_assert(DIR_NONE == 1, "idr_find() inline reads 1 as no leaf");

/* The directory whose entries idr_dir points at, if any. */
static inline struct leafdir *dir_from_entries(uintptr_t *entries)
{
	return entries ? (struct leafdir *)(void *)((char *)entries -
						    offsetof(struct leafdir, leaf)) :
			 NULL;
}

static inline const struct leafdir *dir_load(const struct idr *idr)
{
	return dir_from_entries(__atomic_load_n((uintptr_t *const *)&idr->idr_dir,
						__ATOMIC_ACQUIRE));
}

enum dir_answer { DIR_NO_LEAF, DIR_LEAF, DIR_ASK_TREE };

/* The leaf that holds @slot, the leaf slot of @index. */
static inline struct idr_node *slot_leaf(void **slot, uint64_t index)
{
	return (struct idr_node *)(void *)(slot - (index & NODE_MASK));
}

/* What entry @j of @d says about ID @id, whose leaf it stands for. */
static inline enum dir_answer dir_answer(const struct leafdir *d, uint64_t j,
					 uint64_t id, void ***slot)
{
	/* d->leaf + j, not &d->leaf[j]: gcc 12 folds only this form's
	 * offset into the load (one instruction fewer per lookup). */
	uintptr_t e = __atomic_load_n(d->leaf + j, __ATOMIC_ACQUIRE);

	if (__builtin_expect(dir_names_leaf(e), 1)) {
		*slot = (void **)(e + (uintptr_t)id * sizeof(void *));
		return DIR_LEAF;
	}
	return e == DIR_NONE ? DIR_NO_LEAF : DIR_ASK_TREE;
}

/* What either kind of directory says about the leaf of ID @id: entry
 * (ID >> 6) - first, which in a keyed one (first 0) is the fast path's own.
 * For idr_find()'s slow path and the callers off its fast path. */
static inline enum dir_answer dir_lookup_any(const struct idr *idr, uint64_t id,
					     void ***slot)
{
	const struct leafdir *d = dir_load(idr);

	if (!d)
		return DIR_ASK_TREE;
	uint64_t j = (id >> NODE_BITS) - d->first; /* wraps below first */
	return j < d->cap ? dir_answer(d, j, id, slot) : DIR_ASK_TREE;
}

/* A leaf-level slot (in a height-2 node) and the number of its leaf,
 * index >> NODE_BITS: stores into it go through leaf_store(). */
struct leaf_ref {
	void **slot;
	uint64_t leaf;
};

/* An ida leaf slot points at a bitmap of this many IDs. */
#define IDA_CHUNK_BITS 10
#define IDA_CHUNK_IDS (1u << IDA_CHUNK_BITS)
#define IDA_CHUNK_WORDS (IDA_CHUNK_IDS / 64)

/* Nodes obtained up front for one insertion, so it cannot fail halfway. */
struct node_pool {
	struct idr_node *node[IDR_PRELOAD_NODES];
	unsigned count;
	enum node_kind kind;
	struct cleaf *cleaf;     /* one compact leaf, if the insertion needs it */
};

/* What one insertion will take from its pool. */
struct insert_need {
	unsigned full;
	bool compact;
};

/* A way down the tree: node[height] is the root, off[level] the slot taken
 * at each level; what tree_find_free_path() fills in also sets stop. */
struct path {
	struct idr_node *node[MAX_HEIGHT + 1];
	unsigned off[MAX_HEIGHT + 1];
	unsigned height;
	unsigned stop;
};

/* tree.c */
IDR_HIDDEN uint64_t tree_find_free_path(const struct idr *idr, uint64_t start,
					struct path *p);
IDR_HIDDEN void **tree_insert_found(struct path *p, uint64_t index);
IDR_HIDDEN uint64_t tree_find_free(const struct idr *idr, uint64_t start);
IDR_HIDDEN struct insert_need tree_needs(const struct idr *idr, uint64_t index,
				       const void *ptr, bool sparse_ok);
IDR_HIDDEN void **tree_insert(struct idr *idr, uint64_t index,
			      struct node_pool *pool, void *ptr, bool full,
			      bool sparse_ok);
IDR_HIDDEN void *tree_replace(struct idr *idr, uint64_t index, void *ptr);
IDR_HIDDEN void **tree_lookup_slot(const struct idr *idr, uint64_t index,
				   struct idr_node **leaf);
IDR_HIDDEN void tree_mark_full(struct idr *idr, uint64_t index);
IDR_HIDDEN void tree_mark_free(struct idr *idr, uint64_t index);
IDR_HIDDEN void tree_release(struct idr *idr, uint64_t index, bool sparse_ok);
IDR_HIDDEN void *tree_take(struct idr *idr, uint64_t index);
IDR_HIDDEN void tree_destroy(struct idr *idr, void (*leaf_fn)(void *entry));
IDR_HIDDEN void *tree_leaf_word(const struct idr *idr, uint64_t leaf);
IDR_HIDDEN const struct idr_node *tree_leaf_parent(const struct idr *idr, uint64_t leaf);
IDR_HIDDEN uint64_t tree_edge_leaf(const struct idr *idr, bool highest);

/*
 * The allocation hint: the full leaf where the last allocation went
 * (idr_hint, first index idr_hint_base), and whether every index from the
 * base's up to it is taken (idr_hint_full, known when that search started
 * there).  While its leaf has room, the next lowest-free search needs no
 * walk: dense allocation goes from 4 dependent steps per ID to one (make
 * bench, "dense alloc").  It is dropped when that leaf fills, and by any
 * removal in it (the only way the leaf can be freed); a removal below it
 * clears idr_hint_full.  Inline: three stores, on allocation fast paths.
 */
static inline void hint_set(struct idr *idr, void **slot, uint64_t index, uint64_t start)
{
	idr->idr_hint = slot_leaf(slot, index);
	idr->idr_hint_base = (unsigned)(index & ~(uint64_t)NODE_MASK);
	idr->idr_hint_full = start <= base_index(idr);
}
IDR_HIDDEN void leaf_filled(struct idr *idr, struct idr_node *leaf, uint64_t index);

/* Where a hint's search starts in the span of @span IDs from @base that
 * it names: at @start's offset when @start lies in the span, at 0 when
 * @start lies below it and every ID below the span is known taken
 * (*@full_below, read only then); -1 when the hint cannot tell.  The idr's
 * hint and the IDA's share it. */
static inline long hint_from(uint64_t start, uint64_t base, uint64_t span,
			     const unsigned int *full_below)
{
	if (start >= base)
		return start - base < span ? (long)(start - base) : -1;
	return *full_below ? 0 : -1; /* else a hole below might come first */
}

/* The offset of @leaf's lowest free slot at offset @from or above whose
 * ID (the leaf's first is @base) is at most @max; -1 if it has none. */
static inline long leaf_room(const struct idr_node *leaf, uint64_t base, unsigned from,
			     uint64_t max)
{
	uint64_t room = leaf->free & (~(uint64_t)0 << from);

	if (!room || base + (uint64_t)__builtin_ctzll(room) > max)
		return -1;
	return __builtin_ctzll(room);
}

/* The offset in the hint leaf (hint_set() above) of the lowest free ID in
 * [@min, @max] (IDs, @min at least the idr's base and at most @max), if
 * the hint can tell: -1 if it cannot.  Inline: it is most allocations'
 * whole search.  In IDs rather than indices, so that its caller keeps
 * fewer values at hand. */
static inline int hint_offset(const struct idr *idr, uint64_t min, uint64_t max)
{
	const struct idr_node *leaf = idr->idr_hint;
	uint64_t base = idr->idr_hint_base + idr_origin(idr);
	long from;

	if (!leaf || (from = hint_from(min, base, NODE_SLOTS, &idr->idr_hint_full)) < 0)
		return -1;
	return (int)leaf_room(leaf, base, (unsigned)from, max);
}

/* Lockless-reader safe: the non-NULL entries with IDs up to INT_MAX, in
 * order, to @fn(id, entry, @data) until it returns nonzero, which is
 * returned; 0 after the last.  idr_for_each() itself. */
typedef int (*tree_visit_fn)(int id, void *entry, void *data);
IDR_HIDDEN int tree_for_each(const struct idr *idr, tree_visit_fn fn, void *data);
/* Lockless-reader safe: the first index in [@index, @last] whose entry is
 * not NULL, with the entry in *@entry; INDEX_NONE if none. */
IDR_HIDDEN uint64_t tree_next_entry(const struct idr *idr, uint64_t index,
				    uint64_t last, void **entry);

/* handle.c */
IDR_HIDDEN void stamp_generation(struct idr *idr, void **slot, uint64_t index);

/* idr.c, compat.c */
IDR_HIDDEN int64_t alloc_id(struct idr *idr, void *ptr, uint64_t min, uint64_t max,
			    struct node_pool *fixed);
IDR_HIDDEN void compat_drain(struct idr *idr);

/* Writer-side counter updates that lockless snapshots may read. */
static inline void count_add(size_t *counter, long delta)
{
	__atomic_store_n(counter,
			 __atomic_load_n(counter, __ATOMIC_RELAXED) + (size_t)delta,
			 __ATOMIC_RELAXED);
}

/* Bytes of nodes and compact leaves in @idr's tree: what idr_memory_usage()
 * reports beside the directory, and what the directory is weighed against.
 * Relaxed loads, so lockless snapshots may call it too. */
static inline size_t tree_memory(const struct idr *idr)
{
	return __atomic_load_n(&idr->idr_nodes, __ATOMIC_RELAXED) *
		       kind_bytes(idr_kind(idr)) +
	       __atomic_load_n(&idr->idr_sparse, __ATOMIC_RELAXED) *
		       sizeof(struct cleaf);
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

/* What every block from the allocator is aligned to: the tags in node
 * pointers' low bits need it (4 bits of a retired node's on 64-bit hosts,
 * src/rcu.c).  glibc's malloc() aligns to at least this on every host,
 * where _Alignof(max_align_t) can be less (8 on s390x). */
#define MEM_ALIGN (2 * sizeof(void *))
IDR_HIDDEN void *mem_alloc(size_t size);
IDR_HIDDEN void mem_free(void *p, size_t size);
IDR_HIDDEN int pool_fill(struct node_pool *pool, enum node_kind kind,
			 struct insert_need need);
IDR_HIDDEN struct cleaf *pool_take_cleaf(struct node_pool *pool);
IDR_HIDDEN void stock_kind(enum node_kind kind);
IDR_HIDDEN struct idr_node *pool_take(struct node_pool *pool);
IDR_HIDDEN bool in_preload(void);
IDR_HIDDEN struct leafdir *stash_take_dir(size_t cap);
IDR_HIDDEN void stash_want_dir(size_t cap);
IDR_HIDDEN void report(const char *func, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* dir.c */
IDR_HIDDEN void leaf_store(struct idr *idr, struct leaf_ref ref, void *word);
IDR_HIDDEN void dir_missed(struct idr *idr, uint64_t index);
IDR_HIDDEN size_t dir_wanted(struct idr *idr, uint64_t index, uint64_t *first);
IDR_HIDDEN struct leafdir *dir_obtain(size_t cap, bool may_alloc);
IDR_HIDDEN void dir_install(struct idr *idr, struct leafdir *dir, uint64_t first);
IDR_HIDDEN void dir_discard(struct leafdir *dir);
IDR_HIDDEN void dir_drop(struct idr *idr);
IDR_HIDDEN void dir_settle(struct idr *idr);
IDR_HIDDEN size_t dir_bytes(size_t cap);
IDR_HIDDEN size_t dir_memory(const struct idr *idr);
IDR_HIDDEN uintptr_t dir_entry(const void *word, uint64_t leaf);
IDR_HIDDEN const void *dir_leaf_word(const struct idr *idr, uint64_t k);

/* sparse.c: a leaf-level word that is_sparse(); @ref is where it lives */
IDR_HIDDEN bool sparse_allowed(const struct idr *idr);
IDR_HIDDEN bool prefer_single(const void *ptr);
IDR_HIDDEN uint64_t sparse_taken(const void *word);
IDR_HIDDEN void *sparse_find(const void *word, unsigned off);
IDR_HIDDEN bool cleaf_next(const void *word, unsigned from, unsigned *off,
			   void **entry);
IDR_HIDDEN bool sparse_get(const void *word, unsigned off, void **value);
IDR_HIDDEN bool sparse_needs_full(const void *word);
IDR_HIDDEN struct idr_node *sparse_to_full(struct idr *idr, struct leaf_ref ref,
					   struct node_pool *pool);
IDR_HIDDEN void sparse_new(struct idr *idr, struct leaf_ref ref, unsigned off,
			   void *ptr, struct node_pool *pool);
IDR_HIDDEN void sparse_insert(struct idr *idr, struct leaf_ref ref, unsigned off,
			      void *ptr, struct node_pool *pool);
IDR_HIDDEN int sparse_set(struct idr *idr, struct leaf_ref ref, unsigned off, void *ptr);
IDR_HIDDEN bool sparse_remove(struct idr *idr, struct leaf_ref ref, unsigned off);
IDR_HIDDEN void sparse_demote(struct idr *idr, struct leaf_ref ref);
IDR_HIDDEN void sparse_free(void *word);

/* Reader side: the lowest offset >= @from in sparse word @word holding a
 * non-NULL entry.  A singleton is answered here, without a call: walking a
 * sparse idr asks this of most leaves, twice (idr_get_next() from the
 * entry after the last one starts in the same leaf). */
static inline bool sparse_next(const void *word, unsigned from, unsigned *off,
			       void **entry)
{
	if (!is_single(word))
		return cleaf_next(word, from, off, entry);
	*off = single_off(word);
	*entry = single_ptr(word);
	return *off >= from && *entry;
}
IDR_HIDDEN struct idr_node *node_new(struct idr *idr, struct node_pool *pool);

/* lock.c: the lock's fast paths are idr.h's (idr__lock_fast() and
 * idr__unlock_fast()), inline here too, so that the IDA, which locks its
 * idr for every call, pays no call for them (an empty call and return
 * costs about 2 ns on some hosts: bench/README.md).  ME is this thread's
 * token in idr_lock_owner, the address of its idr__thread: unique among
 * live threads.  A new thread may reuse an exited owner's address and
 * inherit its biases, which is safe: one live thread still owns each. */
#define ME idr__lock_token()

/* rcu.c */
/* @fn(@head) after a grace period, in libidr's next batch (src/rcu.c):
 * what libidr frees after a grace period, and not a node, goes here. */
IDR_HIDDEN void batch_rcu(struct rcu_head *head, void (*fn)(struct rcu_head *head));
IDR_HIDDEN void cleaf_retire(struct idr *idr, struct cleaf *c);
IDR_HIDDEN void node_retire(struct idr *idr, struct idr_node *node);
IDR_HIDDEN void subtree_retire(struct idr *idr, struct idr_node *node,
			       unsigned height);
IDR_HIDDEN void subtree_free(struct idr_node *node, unsigned height,
			     enum node_kind kind, void (*leaf_fn)(void *entry));

#endif /* IDR_INTERNAL_H */
