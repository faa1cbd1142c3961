/* SPDX-License-Identifier: MIT */
/*
 * The lookup directory: an array beside the tree that locates each leaf,
 * so that idr_find() on a dense idr loads the directory entry and then the
 * leaf slot instead of walking one node per level (at 1M IDs, 2 dependent
 * loads instead of 4; make bench, "random lookup").
 *
 * Why a copy and not a different tree: writers keep every structure they
 * use (free bitmaps, the sparse forms, the height) and never read the
 * directory; readers never write it.  The one rule is order: every store of
 * a leaf-level word goes through leaf_store(), which updates the directory
 * entry at the same time, before the old word's memory is retired, so a
 * reader that finds a leaf through the directory is covered by the same
 * grace period as one that found it through the tree.
 *
 * Why word entries, each a leaf's address less 8 bytes for every ID below
 * its leaf: idr_find() finds a slot at entry + 8 * ID, three instructions
 * fewer than 32-bit entries counting words from a base (bench/README.md,
 * "random lookup").  They cost a dense idr 0.125 B/ID instead of 0.0625,
 * which 520-byte nodes pay for (8.4 B/ID in all).  A sparse word gets
 * DIR_TREE, and its lookups walk the tree.
 *
 * Why two kinds: a keyed directory (entry k for IDs [64k, 64k + 64)) lets
 * idr_find() index it by ID >> 6 with nothing to subtract, but it spans
 * from ID 0.  IDs that sit far above 0 would make it mostly "no leaf", so
 * while a keyed one is not affordable they get a span directory, from the
 * lowest leaf, which idr_find() reaches out of line (dir_lookup_any()).
 * When no span over every leaf is affordable either (a few IDs far from
 * the rest), a span as large as allowed covers where the full leaves are
 * being made, and moves only when they far outnumber what it names
 * (dir_window()).
 *
 * Why it is optional: it costs 8 bytes per 64 IDs of the range it covers,
 * whether or not they are allocated.  It is built and grown only while it
 * stays under 1/DIR_BUILD_RATIO of the tree's memory, and dropped when
 * removals bring it above 1/DIR_DROP_RATIO, so a sparse idr never pays for
 * one.  Growing it needs memory: IDR_GFP_KERNEL allocations outside a
 * preload section get it from the allocator; any other only from a spare
 * that idr_preload() set aside after an earlier allocation on the thread
 * had to go without, so the promise of no allocator call inside a preload
 * section holds.  An allocation that cannot have one goes without: no
 * allocation fails for the directory's sake.
 */
#include "internal.h"

#ifdef IDR_DIR_SMALL
/* Fuzz builds: a directory on nearly every tree of height 2 or more, so
 * that small inputs grow, replace and drop it. */
#define DIR_DOUBLE_BELOW 8
#define DIR_BUILD_RATIO 1
#define DIR_DROP_RATIO 1
#else
#define DIR_DOUBLE_BELOW 16384 /* entries: 128 KiB, a million IDs */
/* As many entries as when they were 32 bits (entries per byte of tree). */
#define DIR_BUILD_RATIO 16
#define DIR_DROP_RATIO 4
#endif

size_t dir_bytes(size_t cap)
{
	return sizeof(struct leafdir) + cap * sizeof(uintptr_t);
}

/* How a directory records leaf-level @word, the leaf of IDs from
 * 64 * @leaf.  (Unsigned arithmetic: the entry may wrap, entry + 8 * ID
 * wraps back.) */
uintptr_t dir_entry(const void *word, uint64_t leaf)
{
	if (!word)
		return DIR_NONE;
	if (is_sparse(word))
		return DIR_TREE;
	return (uintptr_t)word - (uintptr_t)(leaf << NODE_BITS) * sizeof(void *);
}

/* The leaf-level word directory entry @k stands for: none below the
 * base's leaf, which the tree does not cover. */
const void *dir_leaf_word(const struct idr *idr, uint64_t k)
{
	uint64_t skip = dir_skip(idr);

	return k < skip ? NULL : tree_leaf_word(idr, k - skip);
}

static struct leafdir *dir_of(const struct idr *idr)
{
	/* writer side: the writer is the only one to store it */
	return dir_from_entries(idr->idr_dir);
}

/* The directory's number for the leaf of tree index @index. */
static uint64_t dir_leaf_of(const struct idr *idr, uint64_t index)
{
	return (index >> NODE_BITS) + dir_skip(idr);
}

/* Has @d (if any) an entry for leaf @leaf? */
static bool dir_covers(const struct leafdir *d, uint64_t leaf)
{
	return d && leaf - d->first < d->cap; /* wraps below first */
}

/* When to look again for a directory over every leaf: once the tree has
 * grown by a quarter. */
static size_t dir_recheck_at(const struct idr *idr)
{
	return tree_memory(idr) / 4 * 5;
}

size_t dir_memory(const struct idr *idr)
{
	const struct leafdir *d = dir_load(idr);

	return d ? dir_bytes(d->cap) : 0;
}

void leaf_store(struct idr *idr, struct leaf_ref ref, void *word)
{
	struct leafdir *d = dir_of(idr);
	uint64_t leaf = ref.leaf + dir_skip(idr);

	slot_store(ref.slot, word);
	if (!dir_covers(d, leaf))
		return;
	uint64_t j = leaf - d->first;
	uintptr_t e = dir_entry(word, leaf);
	d->named += (size_t)dir_names_leaf(e) - (size_t)dir_names_leaf(d->leaf[j]);
	__atomic_store_n(&d->leaf[j], e, __ATOMIC_RELEASE);
}

/* A full leaf now holds @index: if the directory has no entry for it,
 * that is a miss, which may move a window (dir_window()). */
void dir_missed(struct idr *idr, uint64_t index)
{
	struct leafdir *d = dir_of(idr);

	if (d && !dir_covers(d, dir_leaf_of(idr, index)))
		d->misses++;
}

/* @n entries rounded up (down) to a step of DIR_MIN_CAP. */
static uint64_t dir_round_up(uint64_t n)
{
	return (n + DIR_MIN_CAP - 1) / DIR_MIN_CAP * DIR_MIN_CAP;
}

static uint64_t dir_round_down(uint64_t n)
{
	return n / DIR_MIN_CAP * DIR_MIN_CAP;
}

/* Entries for at least @need, growing from @had: double while small (few
 * copies), then by a quarter, so the copying stays linear either way and a
 * large dense idr carries under 25% slack (doubling all the way left 0.105
 * B/ID unused at 10M IDs).  In steps of DIR_MIN_CAP. */
static uint64_t dir_grown(uint64_t had, uint64_t need)
{
	uint64_t cap = !had ? DIR_MIN_CAP :
		       had < DIR_DOUBLE_BELOW ? had * 2 : had + had / 4;

	return dir_round_up(cap < need ? need : cap);
}

/* The most entries a directory may have beside the tree as it is now (a
 * multiple of DIR_MIN_CAP). */
static uint64_t dir_budget(const struct idr *idr)
{
	size_t most = tree_memory(idr) / DIR_BUILD_RATIO;

	if (most < dir_bytes(0))
		return 0;
	return (most - dir_bytes(0)) / sizeof(uintptr_t) / DIR_MIN_CAP * DIR_MIN_CAP;
}

/* Leaves [@low, @high) and @leaf, with a quarter more room on the side
 * @leaf grows towards (below when @down), so that IDs allocated upwards or
 * downwards replace it a few times, not once per leaf.  0 if that costs
 * too much: never a span with no room, which would be copied for every new
 * leaf. */
static size_t dir_span(const struct idr *idr, uint64_t low, uint64_t high,
		       uint64_t leaf, bool down, uint64_t *first)
{
	if (leaf < low)
		low = leaf;
	if (high <= leaf)
		high = leaf + 1;
	low = dir_round_down(low);
	uint64_t room = (high - low) / 4 > DIR_MIN_CAP ? (high - low) / 4 : DIR_MIN_CAP;
	if (down)
		low = low > room ? dir_round_down(low - room) : 0;
	else
		high += room;
	uint64_t cap = dir_round_up(high - low);
	if (!low || cap > dir_budget(idr))
		return 0; /* from 0 it would be a keyed one, already refused */
	*first = low;
	return (size_t)cap;
}

/* Entries of @d that name a leaf outside leaves [@low, @high). */
static size_t named_outside(const struct leafdir *d, uint64_t low, uint64_t high)
{
	size_t n = 0;

	for (size_t j = 0; j < d->cap; j++)
		n += dir_names_leaf(d->leaf[j]) && (d->first + j < low || d->first + j >= high);
	return n;
}

/* A window as large as the budget allows, with @leaf a quarter of the way
 * in from the side it grows towards: for idrs whose leaves no span can
 * afford to cover, such as a million IDs far above 0 beside a few near it,
 * or a cyclic idr's live IDs beside a few long-lived ones.  It is meant for
 * where most full leaves are, so the present one is weighed only each time
 * it has missed another 64th of its size in full leaves, and gives way
 * only when those misses outnumber four to one the leaves the new one
 * would leave out: a cyclic idr's window moves up as its IDs do, while
 * leaves far from the bulk, or scattered at random, walk the tree and
 * leave the bulk its directory.  Each weighing reads the present one
 * once, and each move copies it: a few entries per miss whatever the
 * pattern.  Never while compact leaves, which a directory cannot serve,
 * outnumber half the tree's full nodes. */
static size_t dir_window(const struct idr *idr, struct leafdir *d,
			 uint64_t leaf, bool down, uint64_t *first)
{
	uint64_t cap = dir_budget(idr), low;

	if (cap < 4 * (uint64_t)DIR_MIN_CAP || idr->idr_sparse * 2 > idr->idr_nodes)
		return 0;
	if (down)
		low = leaf > cap / 4 ? leaf - cap / 4 : 0;
	else
		low = leaf + 1 + cap / 4 > cap ? leaf + 1 + cap / 4 - cap : 0;
	low = dir_round_down(low);
	if (d) {
		size_t step = d->cap / 64 ? d->cap / 64 : 1;
		if (d->misses < d->checked_at + step)
			return 0;
		d->checked_at = d->misses;
		if (d->misses / 4 <= named_outside(d, low, low + cap))
			return 0;
	}
	*first = low;
	return (size_t)cap;
}

/* Keyed from ID 0, to past leaf @end and @leaf, grown from a keyed @d. */
static size_t dir_keyed(const struct idr *idr, const struct leafdir *d,
			uint64_t end, uint64_t leaf, uint64_t *first)
{
	if (end <= leaf)
		end = leaf + 1;
	uint64_t cap = dir_grown(d && !d->first ? d->cap : 0, end);
	if (cap > dir_budget(idr))
		return 0;
	*first = 0;
	return (size_t)cap;
}

/* The entries a directory must have for the leaf of @index to be in it,
 * and in *@first the leaf of its entry 0; or 0 if the present one covers
 * it or none that does is due.  In order of preference, over every leaf:
 * keyed from ID 0 (idr_find()'s fast path), else a span, so that an idr
 * whose IDs sit far above 0 still has one; then the present one with
 * @index's leaf added; then a window (dir_window()).  A directory that
 * leaves some leaves out asks again for one over every leaf each time the
 * tree has grown by a quarter. */
size_t dir_wanted(struct idr *idr, uint64_t index, uint64_t *first)
{
	struct leafdir *d = dir_of(idr);
	uint64_t skip = dir_skip(idr), leaf = dir_leaf_of(idr, index);
	uint64_t end = d ? d->first + d->cap : 0; /* past the last leaf covered */
	bool covered = dir_covers(d, leaf);

	if (covered && tree_memory(idr) < d->recheck_at)
		return 0;
	uint64_t low = tree_edge_leaf(idr, false) + skip;
	uint64_t top = tree_edge_leaf(idr, true) + skip + 1;
	if (covered) {
		d->recheck_at = dir_recheck_at(idr);
		if (d->first <= low && top <= end)
			return 0;
	}
	bool down = d && leaf < d->first;
	size_t want = dir_keyed(idr, d, top > end ? top : end, leaf, first);
	if (!want)
		want = dir_span(idr, low, top, leaf, down, first);
	if (want || covered)
		return want;
	if (d)
		want = d->first ? dir_span(idr, d->first, end, leaf, down, first) :
				  dir_keyed(idr, d, end, leaf, first);
	if (!want)
		want = dir_window(idr, d, leaf, down, first);
	return want;
}

/* A directory buffer of @cap entries, not yet filled: the stash's spare
 * first; then, if @may_alloc, the allocator (NULL if it refuses); else
 * NULL, and the stash is asked to have one ready next time. */
struct leafdir *dir_obtain(size_t cap, bool may_alloc)
{
	struct leafdir *d = stash_take_dir(cap);

	if (d)
		return d;
	if (!may_alloc) {
		stash_want_dir(cap);
		return NULL;
	}
	d = mem_alloc(dir_bytes(cap));
	if (d)
		d->cap = cap;
	return d;
}

/* An obtained directory that will not be installed. */
void dir_discard(struct leafdir *dir)
{
	mem_free(dir, dir_bytes(dir->cap));
}

static void free_dir_rcu(struct rcu_head *head)
{
	dir_discard(caa_container_of(head, struct leafdir, rcu));
}

static void dir_retire(struct idr *idr, struct leafdir *d)
{
	if (idr->idr_flags & IDR_F_NO_RCU)
		dir_discard(d);
	else
		batch_rcu(&d->rcu, free_dir_rcu);
}

/* The leaf-level words of directory entries in ascending order, with one
 * tree walk per 64 of them, not one each: a window that moves is filled
 * at the cost of a copy. */
struct word_cursor {
	uint64_t group; /* tree leaf >> NODE_BITS of @parent, or UINT64_MAX */
	const struct idr_node *parent;
};

static const void *cursor_word(const struct idr *idr, struct word_cursor *c,
			       uint64_t k)
{
	uint64_t skip = dir_skip(idr);

	if (k < skip)
		return NULL;
	uint64_t leaf = k - skip;
	if (leaf >> NODE_BITS != c->group) {
		c->group = leaf >> NODE_BITS;
		c->parent = tree_leaf_parent(idr, leaf);
	}
	return c->parent ? c->parent->slots[leaf & NODE_MASK] : NULL;
}

/* Fill @dir, entry 0 standing for leaf @first, from the tree (the entries
 * the old directory has are already in step), publish it, and retire the
 * old one. */
void dir_install(struct idr *idr, struct leafdir *dir, uint64_t first)
{
	struct leafdir *old = dir_of(idr);

	if (root_height(root_load(idr)) < 2) {
		dir_discard(dir);
		return;
	}
	dir->first = first;
	dir->keyed = first ? 0 : dir->cap;
	dir->named = 0;
	dir->misses = 0;
	dir->checked_at = 0;
	dir->recheck_at = dir_recheck_at(idr);
	struct word_cursor cursor = { .group = UINT64_MAX, .parent = NULL };
	for (size_t j = 0; j < dir->cap; j++) {
		uint64_t k = first + j;
		if (dir_covers(old, k))
			dir->leaf[j] = old->leaf[k - old->first];
		else
			dir->leaf[j] = dir_entry(cursor_word(idr, &cursor, k), k);
		dir->named += dir_names_leaf(dir->leaf[j]);
	}
	__atomic_store_n(&idr->idr_dir, (void *)dir->leaf, __ATOMIC_RELEASE);
	if (old)
		dir_retire(idr, old);
}

/* No directory from now on.  Call before retiring nodes it points at. */
void dir_drop(struct idr *idr)
{
	struct leafdir *d = dir_of(idr);

	if (!d)
		return;
	__atomic_store_n(&idr->idr_dir, NULL, __ATOMIC_RELEASE);
	dir_retire(idr, d);
}

/* After removals: a directory that has grown large beside the tree goes. */
void dir_settle(struct idr *idr)
{
	const struct leafdir *d = dir_of(idr);

	if (d && dir_bytes(d->cap) > tree_memory(idr) / DIR_DROP_RATIO)
		dir_drop(idr);
}
