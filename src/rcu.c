/* SPDX-License-Identifier: MIT */
/*
 * RCU glue (liburcu, urcu-bp flavor) and the writer lock.
 *
 * Why urcu-bp: libidr's readers and writers are the application's threads,
 * which a library cannot ask to register with RCU or to report quiescent
 * states.  The "bulletproof" flavor registers a thread on its first read-side
 * section and, with sys_membarrier, its read lock costs a compiler barrier.
 *
 * Why a node can be freed after one grace period: the writer unlinks it (a
 * release store of NULL or of its replacement) before it retires it.
 * A reader that can still reach the node loaded the old pointer inside a
 * read-side section that began before the unlink, and the grace period waits
 * for every such section to end.
 */
#include <sched.h>
#include <stddef.h>

#include "internal.h"

/*
 * Retired nodes wait for their grace period in batches under one rcu_head:
 * a node is its 64 slots, which readers may still load, and its free
 * bitmap, which nobody needs once the node is unlinked, so it has no room
 * for an rcu_head of its own.  Writers push nodes onto `pending`, linked
 * through their ->free words with a tag in the low bits (malloc alignment
 * leaves four): the kind, and for a whole detached subtree its height.
 * Whoever finds `armed` clear hands everything pending to call_rcu(); the
 * callback frees that batch and hands on whatever was pushed meanwhile.
 * A node is taken into a batch after it was unlinked, and the batch's
 * call_rcu() comes after that, so its grace period covers every reader
 * that could still reach the node.
 */
#define TAG_HEIGHT ((uint64_t)7) /* 0: the node alone; else a subtree's height */
#define TAG_GEN ((uint64_t)8)    /* KIND_GEN, else KIND_PLAIN */
#define TAG_MARK TAG_HEIGHT      /* idr_rcu_barrier()'s marker, not a node */
#define TAG_BITS (TAG_HEIGHT | TAG_GEN)
_Static_assert(_Alignof(max_align_t) > TAG_BITS, "room for the tag in a node pointer");
_Static_assert(MAX_HEIGHT < TAG_MARK, "a height is never the marker");

static struct {
	struct idr_node *pending; /* pushed, in no batch yet */
	struct idr_node *batch;   /* waiting for head's grace period */
	bool armed;               /* head is queued, or is being */
	struct rcu_head head;
} retired;

static struct idr_node *next_retired(const struct idr_node *n)
{
	return (struct idr_node *)(uintptr_t)(n->free & ~TAG_BITS);
}

static void free_batch(struct idr_node *n)
{
	while (n) {
		struct idr_node *next = next_retired(n);
		unsigned height = (unsigned)(n->free & TAG_HEIGHT);
		enum node_kind kind = n->free & TAG_GEN ? KIND_GEN : KIND_PLAIN;

		if (height == TAG_MARK)
			__atomic_store_n(&n->slots[0], (void *)n, __ATOMIC_RELEASE);
		else if (height)
			subtree_free(n, height, kind, NULL);
		else
			mem_free(n, kind_bytes(kind));
		n = next;
	}
}

static void batch_done(struct rcu_head *head);

/* With `armed` held: queue everything pending, or let go of `armed` if
 * nothing is.  A push that found `armed` set just before it was let go
 * left its node for this loop to see. */
static void start_batch(void)
{
	for (;;) {
		struct idr_node *b = __atomic_exchange_n(&retired.pending, NULL,
							 __ATOMIC_SEQ_CST);
		if (b) {
			/* Atomic only for TSan, which cannot see call_rcu()'s
			 * ordering inside liburcu. */
			__atomic_store_n(&retired.batch, b, __ATOMIC_RELEASE);
			call_rcu(&retired.head, batch_done);
			return;
		}
		__atomic_store_n(&retired.armed, false, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&retired.pending, __ATOMIC_SEQ_CST) ||
		    __atomic_exchange_n(&retired.armed, true, __ATOMIC_SEQ_CST))
			return;
	}
}

static void batch_done(struct rcu_head *head)
{
	(void)head;
	free_batch(__atomic_load_n(&retired.batch, __ATOMIC_ACQUIRE));
	start_batch();
}

static void retire(struct idr_node *n, uint64_t tag)
{
	struct idr_node *old = __atomic_load_n(&retired.pending, __ATOMIC_RELAXED);

	do
		n->free = (uint64_t)(uintptr_t)old | tag;
	while (!__atomic_compare_exchange_n(&retired.pending, &old, n, true,
					    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	if (!__atomic_exchange_n(&retired.armed, true, __ATOMIC_SEQ_CST))
		start_batch();
}

static uint64_t kind_tag(enum node_kind kind)
{
	return kind == KIND_GEN ? TAG_GEN : 0;
}

void node_retire(struct idr *idr, struct idr_node *node)
{
	enum node_kind kind = idr_kind(idr);

	count_add(&idr->idr_nodes, -1);
	if (idr->idr_flags & IDR_F_NO_RCU)
		mem_free(node, kind_bytes(kind));
	else
		retire(node, kind_tag(kind));
}

static void free_cleaf_rcu(struct rcu_head *head)
{
	mem_free(caa_container_of(head, struct cleaf, rcu), sizeof(struct cleaf));
}

void cleaf_retire(struct idr *idr, struct cleaf *c)
{
	count_add(&idr->idr_sparse, -1);
	if (idr->idr_flags & IDR_F_NO_RCU)
		mem_free(c, sizeof(*c));
	else
		call_rcu(&c->rcu, free_cleaf_rcu);
}

void subtree_free(struct idr_node *node, unsigned height, enum node_kind kind,
		  void (*leaf_fn)(void *entry))
{
	for (unsigned i = 0; i < NODE_SLOTS; i++) {
		void *child = node->slots[i];

		if (!child)
			continue;
		if (height == 2 && is_sparse(child))
			sparse_free(child);
		else if (height > 1)
			subtree_free(child, height - 1, kind, leaf_fn);
		else if (leaf_fn)
			leaf_fn(child);
	}
	mem_free(node, kind_bytes(kind));
}

/* A whole detached tree waits as one entry of a batch. */
void subtree_retire(struct idr *idr, struct idr_node *node, unsigned height)
{
	enum node_kind kind = idr_kind(idr);

	if (idr->idr_flags & IDR_F_NO_RCU)
		subtree_free(node, height, kind, NULL);
	else
		retire(node, kind_tag(kind) | height);
}

void idr_rcu_read_lock(void)
{
	urcu_bp_read_lock();
}

void idr_rcu_read_unlock(void)
{
	urcu_bp_read_unlock();
}

/* liburcu's barrier waits for the callbacks queued before it, but a batch
 * pushed before this call may be queued only after it, by the callback of
 * the batch before.  A marker pushed now lands in the same batch as every
 * node pushed before it or in a later one, and batches end in order. */
void idr_rcu_barrier(void)
{
	_Alignas(max_align_t) struct idr_node mark = { .slots = { NULL } };

	retire(&mark, TAG_MARK);
	while (!__atomic_load_n(&mark.slots[0], __ATOMIC_ACQUIRE)) {
		urcu_bp_barrier();
		sched_yield(); /* the batch may be between two call_rcu()s */
	}
	urcu_bp_barrier(); /* compact leaves and directories */
}

void idr_synchronize_rcu(void)
{
	urcu_bp_synchronize_rcu();
}

/* A caller's idr_rcu_head holds liburcu's rcu_head at its start, which only
 * liburcu reads or writes, and the caller's callback after it, which
 * run_deferred() finds from the rcu_head's address. */
_Static_assert(offsetof(struct idr_rcu_head, idr_urcu) == 0 &&
		       sizeof(struct rcu_head) <= sizeof(((struct idr_rcu_head *)NULL)->idr_urcu) &&
		       _Alignof(struct rcu_head) <= _Alignof(struct idr_rcu_head),
	       "struct idr_rcu_head has room for liburcu's rcu_head");

static void run_deferred(struct rcu_head *rcu)
{
	struct idr_rcu_head *head = (struct idr_rcu_head *)(void *)rcu;

	head->idr_fn(head);
}

void idr_call_rcu(struct idr_rcu_head *head, void (*fn)(struct idr_rcu_head *head))
{
	head->idr_fn = fn;
	call_rcu((struct rcu_head *)(void *)head->idr_urcu, run_deferred);
}

/*
 * fork() copies only the calling thread.  In the child, liburcu's call_rcu
 * worker is gone, so nodes queued for freeing would wait forever (and
 * idr_rcu_barrier() with them), and a parent thread that was inside a
 * read-side section at the fork would hold every grace period back.
 * liburcu repairs both through these hooks, called in this order: its
 * workers pause before the reader registry is locked, since a pausing
 * worker may be waiting for a grace period.  They are not registered with
 * pthread_atfork(): liburcu warns that its call_rcu hooks can hang there
 * when callbacks call free(), as ours do.
 */
void idr_fork_prepare(void)
{
	urcu_bp_call_rcu_before_fork();
	urcu_bp_before_fork();
}

void idr_fork_parent(void)
{
	urcu_bp_after_fork_parent();
	urcu_bp_call_rcu_after_fork_parent();
}

void idr_fork_child(void)
{
	urcu_bp_after_fork_child();
	urcu_bp_call_rcu_after_fork_child();
}
