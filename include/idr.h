/* SPDX-License-Identifier: MIT */
/*
 * libidr - small integer IDs mapped to pointers, with the Linux kernel's
 * 2013 "simplified IDR API" (idr_preload / idr_alloc / idr_preload_end).
 *
 * Everything public lives in this header.  Errors are negative errno values.
 *
 * Synchronization table
 * ---------------------
 *   call                          | may run concurrently with writers?  | allocates?
 *   ------------------------------+-------------------------------------+-----------
 *   idr_alloc*, idr_remove,       | no: writer lock held (idr_lock() or | alloc: yes
 *   idr_replace, idr_destroy,     |     the caller's own, one per idr)  | remove: may
 *   idr_set_cursor, compat calls, |                                     | (never fails)
 *   idr_*_handle except find,     |                                     | replace: one
 *   idr_handle_of, idr_check      |                                     | rare case
 *   idr_find, idr_get_next(_ul),  | yes, inside idr_rcu_read_lock() /   | no
 *   idr_for_each(_entry),         | idr_rcu_read_unlock(); or with the  |
 *   idr_find_handle               | writer lock held                    |
 *   idr_is_empty, idr_get_cursor, | yes (a snapshot that may be stale)  | no
 *   idr_memory_usage              |                                     |
 *   idr_preload, idr_preload_end  | touch only this thread's stash      | preload: yes
 *   idr_synchronize_rcu,          | yes; synchronize outside any read-  | no
 *   idr_call_rcu                  | side section                        |
 *   idr_fork_*                    | the forking thread, around fork()   | no
 *   ida_*                         | yes: the ida takes its own lock     | alloc: yes
 *
 * Any number of readers may run concurrently with each other and with one
 * writer.  Two writers on one idr must never overlap.  Nodes unlinked from an
 * idr that allows RCU readers (the default) are freed only after an RCU grace
 * period (liburcu, "bulletproof" flavor urcu-bp: reader threads need no
 * registration).
 *
 * No call is async-signal-safe.  idr_get_next(), the allocating calls and
 * idr_preload() keep per-thread state (the walk's last node, the preload
 * stash), so none of them may run in a signal handler that can interrupt
 * a libidr call on the same thread.
 *
 * Plugins: libidr is never unloaded once loaded, because threads that used
 * it run its code at their exit: libidr.so is linked with -z nodelete, and
 * a plugin that links libidr.a is kept loaded by it (since 0.5.2), its
 * dlclose() leaving it in place.  So a plugin that must really be unloaded
 * links libidr.so, and may then be dlclose()d while threads that used
 * libidr go on.  Its own callbacks are its code: before it is unloaded, it
 * calls idr_rcu_barrier() so that its idr_call_rcu() callbacks have run.
 *
 * Define IDR_NO_DEPRECATED before including this header to hide the old
 * idr_pre_get()/idr_get_new() API.
 *
 * With gcc or clang, idr_find(), idr_preload(), idr_preload_end(),
 * idr_lock() and idr_unlock() are static inline functions here, whose
 * common cases make no call (docs/guarantees.md, "ABI", says what that
 * freezes and why).  Define IDR_NO_INLINE before including this header to
 * call the library's functions of those names instead, which do the same
 * (IDR_NO_INLINE_FIND: only idr_find()'s).
 */
#ifndef IDR_H
#define IDR_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
/* The inline functions below are C, casts and NULLs included: C++
 * projects that warn about those would otherwise see them in this header. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wzero-as-null-pointer-constant"
#endif
#endif

/* The release this header belongs to, for #if tests: 0.5 is 0 and 5.  A
 * program built with it runs on any later release of the same major
 * number (docs/guarantees.md, "ABI"). */
#define IDR_VERSION_MAJOR 0
#define IDR_VERSION_MINOR 5

/* ---------------------------------------------------------------------- */
/* Allocation flags: userspace stand-ins for the kernel's gfp_t.           */

typedef unsigned int idr_gfp_t;

/* May call the allocator (which may block). */
#define IDR_GFP_KERNEL 0x1u
/* Take nodes from this thread's preload stash first; call the allocator only
 * when the stash is empty (it may then fail with -ENOMEM). */
#define IDR_GFP_NOWAIT 0x2u
/* Same semantics as IDR_GFP_NOWAIT. */
#define IDR_GFP_ATOMIC 0x4u

/* ---------------------------------------------------------------------- */
/* The idr.  Caller-allocated; the fields are private.                     */

/* idr_init_flags() flags. */
/* No lockless (RCU) readers will ever look at this idr: unlinked nodes are
 * freed at once instead of after a grace period. */
#define IDR_F_NO_RCU 0x1u
/* Stale-handle detection: every slot also keeps the generation its ID was
 * allocated in, and the idr_*_handle() calls below work.  Costs 4 bytes per
 * slot (a leaf grows from 520 to 776 bytes); idrs without it pay nothing. */
#define IDR_F_HANDLES 0x2u

struct idr {
	void *idr_root;           /* private: node pointer | tree height */
	void *idr_dir;            /* lookup directory: read by idr_find() inline */
	unsigned int idr_base;    /* private: lowest ID */
	unsigned int idr_next;    /* private: cursor for idr_alloc_cyclic() */
	unsigned int idr_flags;   /* private */
	unsigned int idr_reserve_count; /* private: idr_pre_get() reserve */
	size_t idr_nodes;         /* private: full nodes in the tree */
	size_t idr_sparse;        /* private: compact leaves in the tree */
	void *idr_reserve;        /* private: idr_pre_get() reserve list */
	int idr_reserve_lock;     /* private: guards the reserve */
	int idr_writers;          /* private: IDR_DEBUG builds count writers */
	unsigned int idr_clock;   /* private: allocation clock (IDR_F_HANDLES) */
	void *idr_hint;           /* private: leaf the last allocation used */
	unsigned int idr_hint_base; /* private: its first index */
	unsigned int idr_hint_full; /* private: every index below it is taken */
	int idr_lock_word;        /* private: futex word, see idr_lock() */
	int idr_lock_busy;        /* private: the owner holds it through the bias */
	void *idr_lock_owner;     /* private: thread the lock is biased to */
	int idr_lock_revoke;      /* private: the bias is being taken away */
};

/*
 * Static initializers: the state idr_init(), idr_init_base() and
 * idr_init_flags() (below) give, a negative @base counting as 0 and unknown
 * flag bits dropped as they do.  @base is evaluated twice.  A handle idr
 * initialized this way stocks its nodes late (see idr_init_flags()).
 */
#define IDR_INIT_FLAGS(name, base, flags)                                   \
	{ NULL, NULL, (base) > 0 ? (base) : 0, 0,                           \
	  (flags) & (IDR_F_NO_RCU | IDR_F_HANDLES), 0, 0, 0, NULL, 0, 0, 0, \
	  NULL, 0, 0, 0, 0, NULL, 0 }
#define IDR_INIT_BASE(name, base) IDR_INIT_FLAGS(name, base, 0)
#define IDR_INIT(name) IDR_INIT_BASE(name, 0)
/* A statically initialized, empty idr handing out IDs from 0.  IDR_INIT()
 * is all zeros, so a zero-filled struct idr (calloc(), memset()) is such
 * an idr too, with no idr_init().  A zero-filled struct ida is an empty ida
 * too (since 0.5.4), though IDA_INIT() is not all zeros. */
#define DEFINE_IDR(name) struct idr name = IDR_INIT(name)

/**
 * idr_init - initialize an empty idr whose lowest ID is 0.
 * Context: any; the idr must not be in use.  Does not allocate.
 */
void idr_init(struct idr *idr);

/**
 * idr_init_base - initialize an empty idr whose lowest ID is @base.
 * @base: lowest ID handed out (e.g. 1 so that 0 can mean "none"); >= 0.
 *        A negative base is treated as 0.
 * IDs below @base cost no nodes.  Once the idr is large, its fastest
 * lookup directory spans them too, at 8 bytes per 64 IDs below @base;
 * until then (for ever, with a base of 2^24 or more and a million IDs) a
 * directory over the IDs in use serves lookups, about 1.3x slower; if a
 * few IDs sit far from the rest, over the rest.
 * Context: any; the idr must not be in use.  Does not allocate.
 */
void idr_init_base(struct idr *idr, int base);

/**
 * idr_init_flags - idr_init_base() plus IDR_F_* flags.
 * Unknown flag bits are ignored.  A handle idr (IDR_F_HANDLES) should be
 * initialized with this call rather than statically: it is what tells
 * idr_preload() to stock the larger nodes such an idr uses (a static one
 * gets them from its first allocation on).
 * Context: any; the idr must not be in use.  Does not allocate.
 */
void idr_init_flags(struct idr *idr, int base, unsigned int flags);

/**
 * idr_destroy - free every node of @idr (never the stored pointers).
 * Afterwards the idr is empty (cursor reset to 0) and may be used again.
 * Context: writer lock held or no other users.  Does not allocate.  In an
 *          RCU idr the nodes are freed after a grace period, so concurrent
 *          readers stay safe.
 */
void idr_destroy(struct idr *idr);

/* ---------------------------------------------------------------------- */
/* Not for direct use: what the inline fast paths below share with the     */
/* library (part of the ABI since 0.4.0, docs/guarantees.md).              */

#if (defined(__GNUC__) || defined(__clang__)) && !defined(IDR_NO_INLINE)
#define IDR__INLINE 1
#else
#define IDR__INLINE 0
#endif

#if defined(__GNUC__) || defined(__clang__)
/* This thread's preload section depth, and whether its stash is known to be
 * full: the value of idr__stocked_kinds it was last found full for, 0 when
 * something may be missing.  Its address is also the thread's token in
 * idr_lock()'s owner field (unique among live threads).  initial-exec: a
 * load or store at a fixed offset from the thread pointer, never a call. */
struct idr__thread_state {
	unsigned int preload_depth;
	unsigned int preload_ready;
};
extern __thread struct idr__thread_state idr__thread
	__attribute__((tls_model("initial-exec")));
/* The node kinds idr_preload() stocks; only ever gains bits. */
extern unsigned int idr__stocked_kinds;

void idr__preload_slow(unsigned int kinds);
void idr__preload_unmatched(void);
void idr__lock_unowned(struct idr *idr, void *owner);
void idr__word_lock(int *word);
void idr__word_unlock(int *word);
void idr__wake_revokers(struct idr *idr);

/* idr_preload()'s whole common case: one compare on the thread's state. */
static inline void idr__preload_fast(void)
{
	unsigned int kinds = __atomic_load_n(&idr__stocked_kinds, __ATOMIC_RELAXED);

	idr__thread.preload_depth++;
	if (__builtin_expect(idr__thread.preload_ready != kinds, 0))
		idr__preload_slow(kinds);
}

static inline void idr__preload_end_fast(void)
{
	if (__builtin_expect(idr__thread.preload_depth == 0, 0))
		idr__preload_unmatched();
	else
		idr__thread.preload_depth--;
}

static inline void *idr__lock_token(void)
{
	return (void *)&idr__thread;
}

/* The lock's owner leaves the bias; a revoker may be waiting for busy to
 * drop (src/lock.c explains the protocol). */
static inline void idr__leave_biased(struct idr *idr)
{
	__atomic_store_n(&idr->idr_lock_busy, 0, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__builtin_expect(__atomic_load_n(&idr->idr_lock_revoke, __ATOMIC_RELAXED), 0))
		idr__wake_revokers(idr);
}

/* The owner enters through the bias, unless a revoker has asked for the
 * lock: then it backs out.  No fence: the revoker's membarrier() orders
 * the store before the load, as far as the revoker can tell. */
static inline bool idr__enter_biased(struct idr *idr)
{
	__atomic_store_n(&idr->idr_lock_busy, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__builtin_expect(!__atomic_load_n(&idr->idr_lock_revoke, __ATOMIC_ACQUIRE), 1))
		return true;
	idr__leave_biased(idr);
	return false;
}

/* idr_lock(): the owner only tests and stores; everything else is a call. */
static inline void idr__lock_fast(struct idr *idr)
{
	void *owner = __atomic_load_n(&idr->idr_lock_owner, __ATOMIC_ACQUIRE);

	if (__builtin_expect(owner != idr__lock_token(), 0)) {
		idr__lock_unowned(idr, owner);
		return;
	}
	if (__builtin_expect(!idr__enter_biased(idr), 0)) /* being revoked */
		idr__word_lock(&idr->idr_lock_word);
}

/* idr_unlock().  Only the owner ever sets busy, and only while it holds
 * the lock through the bias; anyone else holds the word. */
static inline void idr__unlock_fast(struct idr *idr)
{
	if (__builtin_expect(__atomic_load_n(&idr->idr_lock_owner, __ATOMIC_RELAXED) !=
				     idr__lock_token() ||
			     !__atomic_load_n(&idr->idr_lock_busy, __ATOMIC_RELAXED), 0)) {
		idr__word_unlock(&idr->idr_lock_word);
		return;
	}
	idr__leave_biased(idr);
}
#endif

/* ---------------------------------------------------------------------- */
/* Preloading: the simplified 2013 API.                                    */

/**
 * idr_preload - fill this thread's node stash for the idr_alloc*() that follow.
 * @gfp: IDR_GFP_*; the allocator is called either way.
 *
 * After it, one idr_alloc*() (or ida_alloc*() node) on any idr cannot fail for
 * lack of memory: the stash holds enough nodes for the worst-case insertion.
 * Call it without locks held, then take the lock and allocate with
 * IDR_GFP_NOWAIT.  Sections may nest; each must be closed by
 * idr_preload_end().  Leftover nodes stay with the thread for its next
 * preload and are freed when the thread exits (if the process had a
 * thread-specific data key left for it at its first idr_preload(): if
 * not, that is reported once and a thread's stash is freed only by
 * idr_preload_drain()).  If an IDR_GFP_NOWAIT
 * allocation on this thread had to go without a larger lookup directory
 * (docs/design.md), the stash also sets one aside for the next one.
 *
 * Cost: with gcc or clang, inline (below): an increment and one compare on
 *       this thread's state; a call only when the stash needs filling.
 * Context: any thread, no lock needed; may call the allocator (may block).
 * Return: nothing.  It never fails: if the allocator fails the stash stays
 *         partly filled and a later allocation may return -ENOMEM.
 */
#if IDR__INLINE
static inline void idr_preload(idr_gfp_t gfp)
{
	(void)gfp; /* userspace allocators have no non-blocking mode to pick */
	idr__preload_fast();
}
#else
void idr_preload(idr_gfp_t gfp);
#endif

/**
 * idr_preload_end - close the section opened by idr_preload().
 * An unmatched call is reported through the diagnostic hook (and aborts in
 * builds with IDR_DEBUG defined).
 * Cost: with gcc or clang, inline (below): a test and a decrement.
 * Context: the thread that called idr_preload().  Does not allocate.
 */
#if IDR__INLINE
static inline void idr_preload_end(void)
{
	idr__preload_end_fast();
}
#else
void idr_preload_end(void);
#endif

/**
 * idr_preload_drain - free this thread's stash now instead of at thread exit.
 * Context: outside a preload section.  Does not allocate.
 */
void idr_preload_drain(void);

/* Nodes the stash is filled to: the worst-case insertion needs this many. */
#define IDR_PRELOAD_NODES 10

/* ---------------------------------------------------------------------- */
/* Allocation.                                                             */

/**
 * idr_alloc - store @ptr under the lowest free ID in [@start, @end).
 * @ptr: stored pointer; NULL reserves the ID (see idr_replace()).
 * @start: lowest acceptable ID (IDs below the idr's base are skipped).
 * @end: one past the highest ID allowed; <= 0 means no limit (INT_MAX is the
 *       highest ID then).
 * @gfp: IDR_GFP_*; nodes come from this thread's stash first.
 *
 * Context: writer lock held.  May call the allocator when the stash runs
 *          out, and with IDR_GFP_KERNEL outside a preload section to grow the
 *          lookup directory of a dense idr; inside a preload section it never
 *          does.
 * Return: the new ID; -EINVAL if @start < 0; -ENOSPC if no ID in the range is
 *         free, or if the range is empty (@end > 0 and @start >= @end, as in
 *         Linux); -ENOMEM if a node was needed and none could be had.  A
 *         directory the allocator refuses fails nothing: the allocation
 *         goes without it, and lookups walk the tree.  On error nothing
 *         changed.
 */
int idr_alloc(struct idr *idr, void *ptr, int start, int end, idr_gfp_t gfp);

/**
 * idr_alloc_cyclic - like idr_alloc(), but search from the cursor (one past
 * the last ID it handed out) and wrap around to @start.
 * Context: writer lock held; allocates as idr_alloc().
 * Return: as idr_alloc().  On success the cursor becomes ID + 1.
 */
int idr_alloc_cyclic(struct idr *idr, void *ptr, int start, int end,
		     idr_gfp_t gfp);

/**
 * idr_alloc_u32 - store @ptr under the lowest free ID in [*@nextid, @max].
 * @nextid: in: lowest acceptable ID; out (on success only): the new ID.
 * @max: highest acceptable ID, inclusive, up to UINT32_MAX.
 *
 * IDs above INT_MAX exist only through this call; idr_find(), idr_remove()
 * and idr_replace() work on them; idr_for_each() and idr_get_next() stop
 * before them, and idr_get_next_ul() (idr_for_each_entry_ul()) reaches them.
 * Context: writer lock held; allocates as idr_alloc().
 * Return: 0; -ENOSPC if nothing is free in the range (or *@nextid > @max);
 *         -ENOMEM as idr_alloc().  On error *@nextid and the idr are unchanged.
 */
int idr_alloc_u32(struct idr *idr, void *ptr, uint32_t *nextid, uint32_t max,
		  idr_gfp_t gfp);

/* ---------------------------------------------------------------------- */
/* Lookup, removal, replacement.                                           */

/**
 * idr_find - the pointer stored under @id.
 * Cost: on a dense idr, two dependent loads through the lookup directory,
 *       inline (below); otherwise a call, and one load per tree level (4
 *       at a million IDs).
 * Context: RCU read-side section or writer lock.  Does not allocate, never
 *          blocks.
 * Return: the pointer; NULL if @id is not allocated (any value of @id,
 *         including ones above UINT32_MAX), or is reserved with NULL.
 *
 * With gcc or clang, idr_find() is the static inline function below, whose
 * common case costs no call: on some hosts a call costs a lookup a third of
 * its time or more (docs/guarantees.md, "ABI").  On a dense idr it reads
 * the lookup directory, which is part of the ABI for this reason: a
 * non-NULL idr_dir points at an array of words, the word before it holding
 * how many of them may be indexed by ID >> 6.  An even word is the address
 * of ID 0's slot as if the leaf held it, so ID id's slot is at word + 8 *
 * id; the word 1 means no ID of that leaf is allocated; any other odd
 * word, or no word, sends the lookup to the library, through
 * idr__find_slow(), a symbol libraries older than 0.3.0 lack: a program
 * built with this header does not run on them, whose directories had
 * another layout.  Defining IDR_NO_INLINE_FIND before including idr.h
 * declares the library's idr_find() instead, which returns the same.
 */
/* Not for direct use: a whole lookup, for when the directory has no answer. */
void *idr__find_slow(const struct idr *idr, unsigned long id);

#if defined(__GNUC__) || defined(__clang__)
/* idr_find()'s fast path, which the library's idr_find() runs too. */
static inline void *idr__find_fast(const struct idr *idr, unsigned long id)
{
	const uintptr_t *dir = (const uintptr_t *)__atomic_load_n(&idr->idr_dir,
								   __ATOMIC_ACQUIRE);
	unsigned long leaf = id >> 6;

	if (__builtin_expect(dir != NULL && leaf < dir[-1], 1)) {
		uintptr_t e = __atomic_load_n(&dir[leaf], __ATOMIC_ACQUIRE);
		if (__builtin_expect(!(e & 1), 1))
			return __atomic_load_n((void *const *)(e + id * sizeof(void *)),
					       __ATOMIC_ACQUIRE);
		if (e == 1)
			return NULL;
	}
	return idr__find_slow(idr, id);
}
#endif

#if IDR__INLINE && !defined(IDR_NO_INLINE_FIND)
static inline void *idr_find(const struct idr *idr, unsigned long id)
{
	return idr__find_fast(idr, id);
}
#else
void *idr_find(const struct idr *idr, unsigned long id);
#endif

/**
 * idr_remove - release @id.
 * Context: writer lock held.  Never fails.  Nodes that empty are freed
 *          (after a grace period in an RCU idr).  When a leaf is left with
 *          4 IDs or fewer it may ask the allocator for a 56-byte compact
 *          leaf to take its place (sparse idrs stay small); if the
 *          allocator refuses, the leaf just stays as it is.
 * Return: the pointer that was stored (NULL for a reservation); NULL if @id
 *         was not allocated, in which case nothing changed.
 */
void *idr_remove(struct idr *idr, unsigned long id);

/**
 * idr_replace - store @ptr under the already allocated @id.
 * Typical use: idr_alloc(idr, NULL, ...) reserves an ID; once the object is
 * ready, idr_replace() publishes it to concurrent idr_find() callers.
 * Context: writer lock held.  Allocates in one case only: an ID that is
 *          alone in its leaf is kept inside its parent's slot word, which
 *          holds any pointer that is 4-byte aligned with a clear top byte
 *          (every malloc'ed or static object); another pointer there needs
 *          a 56-byte compact leaf.
 * Return: the old pointer (may be NULL); IDR_ERR_PTR(-ENOENT) if @id is not
 *         allocated; IDR_ERR_PTR(-ENOMEM) in the case above if the
 *         allocator fails, with nothing changed.  Test with idr_is_err().
 */
void *idr_replace(struct idr *idr, void *ptr, unsigned long id);

/* Error pointers returned by idr_replace(). */
#define IDR_MAX_ERRNO 4095
#ifdef __cplusplus /* C++'s casts: C's, expanded in C++ code, would warn */
#define IDR_ERR_PTR(err) (reinterpret_cast<void *>(static_cast<intptr_t>(err)))
#else
#define IDR_ERR_PTR(err) ((void *)(intptr_t)(err))
#endif
static inline bool idr_is_err(const void *p)
{
	return (uintptr_t)p >= (uintptr_t)-IDR_MAX_ERRNO;
}
static inline int idr_ptr_err(const void *p)
{
	return (int)(intptr_t)p;
}

/* ---------------------------------------------------------------------- */
/* Iteration: non-NULL entries in ID order (IDs <= INT_MAX but for _ul).  */

/**
 * idr_for_each - call @fn(id, ptr, @data) for each non-NULL entry.
 * @fn must not modify the idr.  One walk of the tree: cheaper per entry
 * than a loop of idr_get_next(), which must find its place again each call.
 * Context: RCU read-side section or writer lock.  Does not allocate.
 * Return: 0 after visiting every entry, or the first nonzero value @fn
 *         returned (iteration stops there).
 */
int idr_for_each(const struct idr *idr, int (*fn)(int id, void *p, void *data),
		 void *data);

/**
 * idr_get_next - the first non-NULL entry whose ID is >= *@nextid.
 * On a dense idr the lookup directory takes it straight to *@nextid's leaf;
 * elsewhere it starts at the node above the leaves that this thread's last
 * call searched, when *@nextid falls under it and no such node has left any
 * tree since, and walks down from the root otherwise.  So a loop of calls
 * (idr_for_each_entry()) does not walk down for each entry, and its body may
 * modify the idr (writer lock held): each call reads the tree as it is now.
 * Context: RCU read-side section or writer lock.  Does not allocate.
 * Return: the entry, with *@nextid set to its ID; NULL (and *@nextid
 *         unchanged) if there is none, or if *@nextid < 0.
 */
void *idr_get_next(const struct idr *idr, int *nextid);

/* Loop over the non-NULL entries in ID order; @id (an int) is the ID. */
#define idr_for_each_entry(idr, entry, id)                                  \
	for ((id) = 0;                                                      \
	     (id) >= 0 && ((entry) = idr_get_next((idr), &(id))) != NULL;   \
	     (id) = (id) == INT_MAX ? -1 : (id) + 1)

/* The same loop from @id's current value (inclusive), as after a break. */
#define idr_for_each_entry_continue(idr, entry, id)                         \
	for (; (id) >= 0 && ((entry) = idr_get_next((idr), &(id))) != NULL; \
	     (id) = (id) == INT_MAX ? -1 : (id) + 1)

/**
 * idr_get_next_ul - idr_get_next() over every ID, those above INT_MAX that
 * only idr_alloc_u32() hands out included.
 * Context: as idr_get_next().  Does not allocate.
 * Return: the first non-NULL entry whose ID is >= *@nextid, with *@nextid
 *         set to its ID; NULL (and *@nextid unchanged) if there is none, or
 *         if *@nextid > UINT32_MAX.
 */
void *idr_get_next_ul(const struct idr *idr, unsigned long *nextid);

/* Loops over every non-NULL entry in ID order, IDs above INT_MAX included:
 * from 0, or from @id's current value.  @id and @tmp are unsigned longs.
 * @tmp is the loop's own: it ends the loop where @id + 1 would wrap to 0
 * (after ID UINT32_MAX where unsigned long has 32 bits). */
#define idr_for_each_entry_ul(idr, entry, tmp, id)                          \
	for ((id) = 0, (tmp) = 1;                                           \
	     (tmp) && ((entry) = idr_get_next_ul((idr), &(id))) != NULL;    \
	     (tmp) = (id) + 1, (id) = (tmp))
#define idr_for_each_entry_continue_ul(idr, entry, tmp, id)                 \
	for ((tmp) = 1;                                                     \
	     (tmp) && ((entry) = idr_get_next_ul((idr), &(id))) != NULL;    \
	     (tmp) = (id) + 1, (id) = (tmp))

/**
 * idr_is_empty - whether no ID is allocated (a NULL reservation counts).
 * Context: any.  Return: true if empty.
 */
bool idr_is_empty(const struct idr *idr);

/**
 * idr_get_cursor / idr_set_cursor - read or move the position where the next
 * idr_alloc_cyclic() starts searching.
 * Context: get: any; set: writer lock held.
 */
unsigned int idr_get_cursor(const struct idr *idr);
void idr_set_cursor(struct idr *idr, unsigned int val);

/**
 * idr_memory_usage - bytes of nodes and compact leaves currently in @idr's
 * tree, and of its lookup directory.
 * Not counted: this thread's stash, nodes waiting for an RCU grace period.
 * Context: any (a snapshot).  Return: bytes; 0 for an empty idr.
 */
size_t idr_memory_usage(const struct idr *idr);

/**
 * idr_check - verify every structural invariant of @idr's tree: each free
 * bit agrees with what lies below it, every node has something below it, the
 * root is no taller than it must be, the node count is exact, no entry lies
 * beyond the ID range.  A debugging aid for tests and for code that suspects
 * memory corruption; O(nodes).
 * Context: writer lock held (or no concurrent writer); never allocates.
 * Return: 0 if consistent; -EUCLEAN at the first violation, which is also
 * described to the diagnostic hook (idr_set_diagnostic()).
 */
int idr_check(const struct idr *idr);

/* ---------------------------------------------------------------------- */
/* Generation-checked handles (idrs initialized with IDR_F_HANDLES).       */

/*
 * A handle packs an ID and the generation it was allocated in:
 *
 *     bits 63..32: generation (never 0)    bits 31..0: ID
 *
 * so 0 is never a valid handle and may mean "none".  Each allocation in a
 * handle idr takes the next value of the idr's 32-bit allocation clock as
 * the ID's generation.  A handle goes stale when its ID is removed.  After
 * that, the *_handle() calls reject it.  They also reject it after the ID
 * is handed out again, whatever happened to the tree in between: leaves
 * freed and rebuilt, the tree shrunk and regrown.
 *
 * The exact guarantee: a stale handle is rejected until the idr has made
 * 2^32 - 1 allocations (about 4.3 billion) after the one that issued it.
 * Only then does the clock come back to the handle's generation, and even
 * then the handle resolves only if that very allocation reissued its ID.
 * The clock lives as long as the idr: idr_destroy() keeps it, so an idr
 * destroyed and used again still rejects the handles it issued before.
 * Initializing the struct again (idr_init_flags(), IDR_INIT_FLAGS()) makes
 * a new idr whose clock starts over, and handles of the old one may then
 * resolve in it, as one idr's handles may in another idr: to empty a table
 * whose handles are still held, destroy it and keep it, never re-init it.
 */
typedef uint64_t idr_handle_t;

static inline idr_handle_t idr_handle_make(uint32_t id, uint32_t gen)
{
	return (idr_handle_t)gen << 32 | id;
}
static inline uint32_t idr_handle_id(idr_handle_t handle)
{
	return (uint32_t)handle;
}
static inline uint32_t idr_handle_gen(idr_handle_t handle)
{
	return (uint32_t)(handle >> 32);
}

/**
 * idr_alloc_handle - idr_alloc(), also returning the new ID's handle.
 * Same range, gfp, preload and locking rules as idr_alloc().  The plain ID
 * is the return value; *@handle gets the handle.
 * Return: the ID; -EINVAL (also if @idr was not initialized with
 *         IDR_F_HANDLES), -ENOSPC, -ENOMEM as idr_alloc().  *@handle is
 *         written only on success.
 */
int idr_alloc_handle(struct idr *idr, void *ptr, int start, int end,
		     idr_gfp_t gfp, idr_handle_t *handle);

/**
 * idr_find_handle - the pointer stored under @handle's ID, if @handle is
 * current.
 * Context: as idr_find(): RCU read-side section or writer lock.  A lookup
 *          racing a removal returns the object or NULL, never the object
 *          that a later allocation stored under the same ID.
 * Return: the pointer; NULL if @handle is stale, was never issued, its ID
 *         is reserved with NULL, or @idr has no handles.
 */
void *idr_find_handle(const struct idr *idr, idr_handle_t handle);

/**
 * idr_remove_handle - idr_remove(), only if @handle is current.
 * Context: writer lock held.  Does not allocate.
 * Return: the removed pointer; NULL if @handle is stale (nothing is
 *         removed) or the entry was a NULL reservation.
 */
void *idr_remove_handle(struct idr *idr, idr_handle_t handle);

/**
 * idr_replace_handle - idr_replace(), only if @handle is current.
 * Context: writer lock held.  Does not allocate.
 * Return: the old pointer; IDR_ERR_PTR(-ENOENT) if @handle is stale.
 */
void *idr_replace_handle(struct idr *idr, void *ptr, idr_handle_t handle);

/**
 * idr_handle_of - the current handle of allocated @id (for IDs allocated
 * with the plain calls on a handle idr).
 * Context: writer lock held.  Does not allocate.
 * Return: the handle; 0 if @id is not allocated or @idr has no handles.
 */
idr_handle_t idr_handle_of(const struct idr *idr, unsigned long id);

/* ---------------------------------------------------------------------- */
/* Locking and RCU.                                                        */

/**
 * idr_lock / idr_unlock - the idr's own writer lock.  It is biased: the
 * first thread to lock an idr becomes its owner and locks and unlocks it
 * with plain stores, no atomic instructions.  The first time another thread
 * locks it, that thread revokes the bias (one membarrier(2) call, which
 * interrupts each CPU running the process) and from then on the idr uses a
 * futex-based sleeping mutex that spins briefly before it sleeps.  After 64
 * revocations in a process, new idrs start unbiased.  Not recursive; unlock
 * only from the thread that locked.  It needs no initialization beyond
 * idr_init() or DEFINE_IDR() and no destruction.  Callers may instead
 * serialize writers with a lock of their own.
 * Cost: with gcc or clang the owner's paths are inline (below): a load, a
 *       compare, a store and a load each, no call; everyone else calls
 *       into the library.
 * Context: any thread; idr_lock() may block.  Neither allocates.  If
 *          membarrier(2) stops working after it worked (a seccomp filter
 *          installed later), a revoking idr_lock() reports and aborts, as
 *          liburcu does in the same case.
 */
#if IDR__INLINE
static inline void idr_lock(struct idr *idr)
{
	idr__lock_fast(idr);
}

static inline void idr_unlock(struct idr *idr)
{
	idr__unlock_fast(idr);
}
#else
void idr_lock(struct idr *idr);
void idr_unlock(struct idr *idr);
#endif

/**
 * idr_rcu_read_lock / idr_rcu_read_unlock - open and close an RCU read-side
 * section (liburcu's urcu-bp flavor: rcu_read_lock() from <urcu-bp.h> is the
 * same thing).  Sections nest.  Inside one, idr_find(), idr_get_next() and
 * idr_for_each() may run concurrently with a writer; pointers they return
 * stay valid (the idr's nodes, not your objects) until the section ends.
 * Cost: a call each, into libidr, which runs liburcu-bp's read lock and
 * unlock inline there (about 35 instructions a section; README, "Thread
 * safety").  They stay out of line here so that liburcu's LGPL code is
 * never compiled into your code from this header.
 * Context: any thread; no registration needed.  Never blocks.
 */
void idr_rcu_read_lock(void);
void idr_rcu_read_unlock(void);

/**
 * idr_rcu_barrier - wait until every node libidr queued for freeing after a
 * grace period has been freed, and every idr_call_rcu() callback queued
 * before the call has run.  Useful before checking for leaks, before
 * idr_set_allocator(), or before unloading.
 * Context: not inside an RCU read-side section; blocks.
 */
void idr_rcu_barrier(void);

/**
 * idr_synchronize_rcu - wait for a grace period: until every RCU read-side
 * section that was open when it was called has ended.  Between
 * idr_remove() (or idr_replace()) and freeing the object it returned, this
 * is what makes the free safe: a lockless reader that found the object
 * did so inside a section that has now ended.  It waits for the sections
 * of libidr's flavor (urcu-bp), which idr_rcu_read_lock() opens; another
 * liburcu flavor's synchronize_rcu() would not wait for them.
 * Context: any thread, outside any read-side section (inside one it would
 *          wait for itself forever), holding no lock that a reader waits
 *          for inside its section; an idr's writer lock may be held.
 *          Blocks, typically for milliseconds.  Does not allocate.
 */
void idr_synchronize_rcu(void);

/* What idr_call_rcu() needs: embed one in each object it is to free. */
struct idr_rcu_head {
	void *idr_urcu[2];                         /* private: an rcu_head */
	void (*idr_fn)(struct idr_rcu_head *head); /* private: the callback */
};

/**
 * idr_call_rcu - call @fn(@head) once a grace period has passed, without
 * waiting for it: the non-blocking form of idr_synchronize_rcu(), for
 * freeing an object removed from an idr while lockless readers may still
 * use it.  @head is a struct idr_rcu_head inside the object; @fn recovers
 * the object from it (offsetof) and frees it.  @fn runs later on liburcu's
 * call_rcu worker thread, so it must be safe to run on another thread, and
 * should not block for long: it holds up the callbacks queued after it,
 * libidr's own node frees among them.  The object and @head must stay
 * untouched until @fn runs.  The callbacks one thread queues run in the
 * order it queued them.  idr_rcu_barrier() waits for the callbacks queued
 * before it, so @fn must not call it (nor idr_synchronize_rcu()).
 * Context: any thread, inside or outside a read-side section, with any
 *          lock held.  Does not wait for a grace period: it pushes @head
 *          onto libidr's queue of frees, which takes one compare-and-swap,
 *          and at most waits briefly for the lock under which a batch of
 *          that queue goes to liburcu (held across a fork by
 *          idr_fork_prepare()).  The first call in a process may start
 *          liburcu's worker thread, as libidr's own node frees do; liburcu
 *          aborts if it cannot.
 */
void idr_call_rcu(struct idr_rcu_head *head,
		  void (*fn)(struct idr_rcu_head *head));

/**
 * idr_fork_prepare / idr_fork_parent / idr_fork_child - make libidr usable
 * in the child of a fork() that is not followed by exec().
 *
 * Call idr_fork_prepare() just before fork(), then idr_fork_parent() in the
 * parent and idr_fork_child() in the child, just after it.  Without them,
 * nodes the child queues for freeing are never freed, idr_rcu_barrier()
 * never returns there, and a parent thread that was inside a read-side
 * section at the fork holds back the child's grace periods.  They wrap
 * liburcu's fork hooks for urcu-bp and its call_rcu, and also hold the lock
 * under which libidr hands what it frees to liburcu, so other threads may
 * go on removing, destroying and calling idr_call_rcu() meanwhile: the
 * child inherits that queue whole (a thread that starts a batch of frees
 * waits until idr_fork_parent()).  A program that calls liburcu's hooks
 * itself calls these instead.  Do not register them with pthread_atfork():
 * liburcu warns that its call_rcu hooks can hang there when callbacks free
 * memory, as libidr's do.  In the child, an idr whose lock another thread
 * held at the fork stays locked, as any mutex does (the lock's bias is
 * taken care of without these calls); the preload stashes of the other
 * threads, up to IDR_PRELOAD_NODES nodes each, and an item another thread
 * was queueing at that instant, are never freed there.
 * Context: the thread that forks, outside any RCU read-side section and
 *          holding no idr lock; idr_fork_prepare() may block until
 *          liburcu's workers pause and libidr's queue is free.  A worker
 *          pauses only after the grace period it is in, which waits for
 *          the sections open in every thread: no thread may hold one open
 *          until the fork is over.  None allocates.
 */
void idr_fork_prepare(void);
void idr_fork_parent(void);
void idr_fork_child(void);

/* ---------------------------------------------------------------------- */
/* Allocator hook and diagnostics (process-wide).                          */

struct idr_allocator {
	/* NULL = out of memory.  Need not zero.  Must return memory aligned to
	 * 2 * sizeof(void *) (16 bytes on 64-bit hosts), as glibc's malloc()
	 * does: libidr gives a block aligned less straight back to @free and
	 * fails as if out of memory.  Must be thread-safe: RCU frees run on
	 * liburcu's worker thread. */
	void *(*alloc)(size_t size, void *ctx);
	void (*free)(void *ptr, size_t size, void *ctx);
	void *ctx;
};

/**
 * idr_set_allocator - use @a for every node of every idr and ida and for the
 * preload stashes.  NULL restores malloc/free.
 * Context: while no idr, ida or stash holds memory (see idr_preload_drain()
 *          and idr_rcu_barrier()).
 */
void idr_set_allocator(const struct idr_allocator *a);

/**
 * idr_set_diagnostic - where misuse is reported: ida_free() of a free ID,
 * idr_preload_end() without idr_preload(), a thread exiting inside a preload
 * section; and a process out of thread-specific data keys at its first
 * idr_preload().  @fn(func, message, ctx) gets the libidr function's name and a
 * one-line message.  NULL restores the default: one line on stderr.
 * Context: any; process-wide.
 */
void idr_set_diagnostic(void (*fn)(const char *func, const char *msg,
				   void *ctx), void *ctx);

/* ---------------------------------------------------------------------- */
/* IDA: IDs without pointers, about one bit per allocated ID.              */

struct ida {
	struct idr ida_rt;        /* private: tree of 1024-bit bitmaps */
	size_t ida_bitmaps;       /* private: bitmap leaves allocated */
	void *ida_hint;           /* private: bitmap the last allocation used */
	unsigned int ida_hint_chunk; /* private: its chunk */
	unsigned int ida_hint_low;   /* private: its bits below this are set */
	unsigned int ida_hint_full;  /* private: every chunk below it is full */
};

#define IDA_INIT(name)                                                      \
	{ IDR_INIT_FLAGS((name).ida_rt, 0, IDR_F_NO_RCU), 0, NULL, 0, 0, 0 }
#define DEFINE_IDA(name) struct ida name = IDA_INIT(name)

/**
 * ida_init - initialize an empty ida.  Context: not in use.  No allocation.
 * DEFINE_IDA(), IDA_INIT() and zeroing the struct (since 0.5.4) give the
 * same ida.
 */
void ida_init(struct ida *ida);

/**
 * ida_destroy - free all memory of @ida; it is empty and usable afterwards.
 * Context: no concurrent ida calls on @ida.
 */
void ida_destroy(struct ida *ida);

/**
 * ida_alloc_range - allocate the lowest free ID in [@min, @max].
 * @max: inclusive; values above INT_MAX are treated as INT_MAX.
 * @gfp: IDR_GFP_*; tree nodes come from this thread's stash first; bitmap
 *       leaves come from the allocator.
 * Context: any thread; takes the ida's own lock.  May call the allocator.
 * Return: the ID; -ENOSPC if none is free in the range (or @min > @max, or
 *         @min > INT_MAX); -ENOMEM if memory was needed and none could be had
 *         (nothing changed).
 */
int ida_alloc_range(struct ida *ida, unsigned int min, unsigned int max,
		    idr_gfp_t gfp);

/* ida_alloc_range() over [0, INT_MAX], [min, INT_MAX] and [0, max]. */
int ida_alloc(struct ida *ida, idr_gfp_t gfp);
int ida_alloc_min(struct ida *ida, unsigned int min, idr_gfp_t gfp);
int ida_alloc_max(struct ida *ida, unsigned int max, idr_gfp_t gfp);

/**
 * ida_free - release @id.  Freeing an ID that is not allocated changes
 * nothing and is reported through the diagnostic hook.
 * Context: any thread; takes the ida's own lock.  Does not allocate.
 */
void ida_free(struct ida *ida, unsigned int id);

/**
 * ida_exists - whether @id is allocated.  Context: any; takes the lock.
 */
bool ida_exists(struct ida *ida, unsigned int id);

/**
 * ida_find_first_range - the lowest allocated ID in [@min, @max].
 * @max: inclusive; values above INT_MAX are treated as INT_MAX.
 * Context: any thread; takes the ida's own lock.  Does not allocate.
 * Return: the ID; -ENOENT if no ID in the range is allocated (or @min >
 *         @max); -EINVAL if @min > INT_MAX.
 * Since 0.5.0 (the kernel's IDA has it since Linux 6.15).
 */
int ida_find_first_range(struct ida *ida, unsigned int min, unsigned int max);

/* ida_find_first_range() over [0, INT_MAX]: -ENOENT if @ida is empty. */
int ida_find_first(struct ida *ida);

/**
 * ida_is_empty - whether no ID is allocated.  Context: any (a snapshot).
 */
bool ida_is_empty(const struct ida *ida);

/**
 * ida_memory_usage - bytes of heap held by @ida (nodes and bitmaps).
 * Context: any (a snapshot).
 */
size_t ida_memory_usage(const struct ida *ida);

/**
 * ida_check - idr_check() for an ida; also checks that no empty bitmap is
 * kept and that each "chunk full" bit matches its bitmap.
 * Context: may block (takes the ida's lock); never allocates.
 * Return: 0 or -EUCLEAN, as idr_check().
 */
int ida_check(struct ida *ida);

/* ---------------------------------------------------------------------- */
/* The deprecated pre-2013 API, as shims over the new one.  See
 * docs/migration.md.  Hidden with -DIDR_NO_DEPRECATED.                     */

#ifndef IDR_NO_DEPRECATED
#if defined(__GNUC__) || defined(__clang__)
#define IDR_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define IDR_DEPRECATED(msg)
#endif

/**
 * idr_pre_get - fill @idr's own reserve of nodes for one idr_get_new*().
 * The reserve belongs to the idr, so another thread may take it first.
 * Context: no lock needed against other idr_pre_get() callers, but it takes
 *          the idr's lock briefly; may call the allocator.
 * Return: 1 if the reserve is full, 0 if the allocator failed.
 */
IDR_DEPRECATED("use idr_preload() and idr_alloc()")
int idr_pre_get(struct idr *idr, idr_gfp_t gfp);

/**
 * idr_get_new - store @ptr under the lowest free ID >= the base, in *@id.
 * Uses only nodes from the idr's reserve (never the allocator).
 * Context: writer lock held.
 * Return: 0; -EAGAIN if the reserve ran out (call idr_pre_get() and retry);
 *         -ENOSPC if every ID up to INT_MAX is taken.
 */
IDR_DEPRECATED("use idr_alloc(idr, ptr, 0, 0, gfp)")
int idr_get_new(struct idr *idr, void *ptr, int *id);

/**
 * idr_get_new_above - as idr_get_new(), lowest free ID >= @starting_id.
 * Return: as idr_get_new(); -EINVAL if @starting_id < 0.
 */
IDR_DEPRECATED("use idr_alloc(idr, ptr, starting_id, 0, gfp)")
int idr_get_new_above(struct idr *idr, void *ptr, int starting_id, int *id);

/**
 * ida_simple_get - the kernel's IDA call of 2011-2023, over
 * ida_alloc_range(): the lowest free ID in [@start, @end), @end exclusive,
 * and 0 for no limit.  Since 0.5.0.
 * Context: as ida_alloc_range().
 * Return: the ID; -EINVAL if @start > INT_MAX; -ENOSPC if none is free in
 *         the range (or @end <= @start, @end not 0); -ENOMEM as
 *         ida_alloc_range().
 */
IDR_DEPRECATED("use ida_alloc_range(ida, start, end - 1, gfp), max inclusive")
int ida_simple_get(struct ida *ida, unsigned int start, unsigned int end,
		   idr_gfp_t gfp);

/**
 * ida_simple_remove - ida_free() by its old name.  Since 0.5.0.
 */
IDR_DEPRECATED("use ida_free()")
void ida_simple_remove(struct ida *ida, unsigned int id);
#endif /* IDR_NO_DEPRECATED */

#ifdef __cplusplus
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif
}
#endif

#endif /* IDR_H */
