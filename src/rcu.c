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
#include <pthread.h>
#include <sched.h>
#include <stddef.h>

#include "internal.h"

/*
 * Everything libidr frees after a grace period waits in batches under one
 * rcu_head, and one call_rcu() at a time queues a batch:
 * - Unlinked nodes.  A node is its 64 slots, which readers may still load,
 *   and its free bitmap, which nobody needs once the node is unlinked, so
 *   it has no room for an rcu_head of its own.  They are pushed onto
 *   `pending`, linked through their ->free words with a tag in the low
 *   bits (malloc alignment leaves four): the kind, and for a whole
 *   detached subtree its height.
 * - Compact leaves, directories and the callers' idr_call_rcu() heads,
 *   each with an rcu_head: pushed onto `pending_heads`, linked through the
 *   rcu_head's own link, with its callback in its func.
 * Whoever finds `armed` clear takes both lists into a batch and hands it
 * to call_rcu(); the batch's callback frees it and hands on whatever was
 * pushed meanwhile.  An item is pushed after it was unlinked, and is taken
 * into a batch whose call_rcu() comes after that, so the grace period
 * covers every reader that could still reach it.  A push is one
 * compare-and-swap, where a call_rcu() of its own would be an enqueue and
 * a wake-up.
 *
 * That one call_rcu(), and the taking of `armed`, hold queue_lock, so that
 * idr_fork_prepare() can take the lock and fork when no thread is halfway
 * through either.  A fork inside liburcu's enqueue would leave the child a
 * callback queue whose tail is not linked from its head, which the child's
 * call_rcu_after_fork_child() and worker wait on forever; a fork after a
 * thread took `armed` and before it queued the batch would leave `armed`
 * set in the child with no batch to clear it, and the child would free
 * nothing again.  A push that a fork splits is lost to the child: one
 * item, leaked there.
 */
/* A retired node's free word holds the next one's address and a 4-bit
 * tag: in the address's low bits where nodes are 16-byte aligned (64-bit
 * hosts: MEM_ALIGN), above the address where it is 32 bits wide (malloc
 * aligns only to 8 bytes on armhf). */
#if WIDE_POINTERS
#define TAG_SHIFT 0
#else
#define TAG_SHIFT 32
#endif
#define TAG_HEIGHT ((uint64_t)7 << TAG_SHIFT) /* 0: the node alone; else a subtree's height */
#define TAG_GEN ((uint64_t)8 << TAG_SHIFT)    /* KIND_GEN, else KIND_PLAIN */
#define TAG_BITS (TAG_HEIGHT | TAG_GEN)
_Static_assert(TAG_SHIFT || MEM_ALIGN > TAG_BITS, "room for the tag in a node pointer");
#define MARK_HEIGHT 7 /* idr_rcu_barrier()'s marker, not a node */
_Static_assert(MAX_HEIGHT < MARK_HEIGHT, "a height is never the marker");

static uint64_t height_tag(unsigned height)
{
	return (uint64_t)height << TAG_SHIFT;
}

static struct {
	struct idr_node *pending;       /* nodes pushed, in no batch yet */
	struct rcu_head *pending_heads; /* heads pushed, in no batch yet */
	struct idr_node *batch;         /* waiting for head's grace period */
	struct rcu_head *batch_heads;   /* the same */
	bool armed;                     /* head is queued, or is being */
	struct rcu_head head;
} retired;

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;

#ifdef IDR_TEST_HOOKS
void (*idr_test_window_hook)(void);
#endif

/* liburcu makes its worker on the first call_rcu(), under its own mutex,
 * which idr_fork_prepare() holds (call_rcu_before_fork()) while it waits
 * for queue_lock: a first call_rcu() made under queue_lock would wait for
 * it in turn.  So the worker is made before queue_lock is taken. */
static void lock_queue(void)
{
	(void)get_default_call_rcu_data();
	pthread_mutex_lock(&queue_lock);
}

static struct idr_node *next_retired(const struct idr_node *n)
{
	return (struct idr_node *)(uintptr_t)(n->free & ~TAG_BITS);
}

static struct rcu_head *next_head(const struct rcu_head *h)
{
	return (struct rcu_head *)(void *)h->next.next;
}

/* Markers are answered last: a marker was pushed after what it waits for,
 * so it comes before it in the list, and its idr_rcu_barrier() must not
 * return while the rest of the batch is still being freed. */
static void free_batch(struct idr_node *n)
{
	struct idr_node *marks = NULL;

	while (n) {
		struct idr_node *next = next_retired(n);
		unsigned height = (unsigned)((n->free & TAG_HEIGHT) >> TAG_SHIFT);
		enum node_kind kind = n->free & TAG_GEN ? KIND_GEN : KIND_PLAIN;

		if (height == MARK_HEIGHT) {
			n->free = (uint64_t)(uintptr_t)marks;
			marks = n;
		} else if (height) {
			subtree_free(n, height, kind, NULL);
		} else {
			mem_free(n, kind_bytes(kind));
		}
		n = next;
	}
	while (marks) {
		struct idr_node *next = (struct idr_node *)(uintptr_t)marks->free;
		/* the barrier's frame may be gone once this is stored */
		__atomic_store_n(&marks->slots[0], (void *)marks, __ATOMIC_RELEASE);
		marks = next;
	}
}

/* The heads' callbacks, in the order they were pushed. */
static void run_heads(struct rcu_head *h)
{
	struct rcu_head *fifo = NULL;

	while (h) {
		struct rcu_head *next = next_head(h);
		h->next.next = (struct cds_wfcq_node *)(void *)fifo;
		fifo = h;
		h = next;
	}
	while (fifo) {
		struct rcu_head *next = next_head(fifo);
		fifo->func(fifo);
		fifo = next;
	}
}

static void batch_done(struct rcu_head *head);

static bool anything_pending(void)
{
	return __atomic_load_n(&retired.pending, __ATOMIC_SEQ_CST) ||
	       __atomic_load_n(&retired.pending_heads, __ATOMIC_SEQ_CST);
}

/* With `armed` and queue_lock held: queue everything pending, or let go of
 * `armed` if nothing is.  A push that found `armed` set just before it was
 * let go left its item for this loop to see.  Nodes are taken before
 * heads: an idr_rcu_barrier() marker, a node, then lands in a batch with
 * every head pushed before it, or after them. */
static void start_batch(void)
{
	for (;;) {
		struct idr_node *b = __atomic_exchange_n(&retired.pending, NULL,
							 __ATOMIC_SEQ_CST);
		struct rcu_head *h = __atomic_exchange_n(&retired.pending_heads, NULL,
							 __ATOMIC_SEQ_CST);
		if (b || h) {
			/* Atomic only for TSan, which cannot see call_rcu()'s
			 * ordering inside liburcu. */
			__atomic_store_n(&retired.batch, b, __ATOMIC_RELEASE);
			__atomic_store_n(&retired.batch_heads, h, __ATOMIC_RELEASE);
			TEST_WINDOW();
			call_rcu(&retired.head, batch_done);
			return;
		}
		__atomic_store_n(&retired.armed, false, __ATOMIC_SEQ_CST);
		if (!anything_pending())
			return;
		/* A push that read `armed` set came in meanwhile; every other
		 * setter of `armed` waits for queue_lock, so take it back. */
		__atomic_store_n(&retired.armed, true, __ATOMIC_SEQ_CST);
	}
}

/* The heads first: a marker in the nodes ends idr_rcu_barrier(), which
 * must find the batch's callbacks run. */
static void batch_done(struct rcu_head *head)
{
	(void)head;
	run_heads(__atomic_load_n(&retired.batch_heads, __ATOMIC_ACQUIRE));
	free_batch(__atomic_load_n(&retired.batch, __ATOMIC_ACQUIRE));
	lock_queue();
	start_batch();
	pthread_mutex_unlock(&queue_lock);
}

/* After a push: start a batch unless one is queued.  `armed` set means a
 * batch is queued (or its callback runs), and its callback will see the
 * push; the test outside the lock spares most pushes the lock.  If it
 * reads `armed` set just as start_batch() lets it go, start_batch() reads
 * the lists after that and sees the push (both sides are sequentially
 * consistent). */
static void arm(void)
{
	if (__atomic_load_n(&retired.armed, __ATOMIC_SEQ_CST))
		return;
	lock_queue();
	if (!__atomic_exchange_n(&retired.armed, true, __ATOMIC_SEQ_CST))
		start_batch();
	pthread_mutex_unlock(&queue_lock);
}

static void retire(struct idr_node *n, uint64_t tag)
{
	struct idr_node *old = __atomic_load_n(&retired.pending, __ATOMIC_RELAXED);

	do
		n->free = (uint64_t)(uintptr_t)old | tag;
	while (!__atomic_compare_exchange_n(&retired.pending, &old, n, true,
					    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	arm();
}

void batch_rcu(struct rcu_head *head, void (*fn)(struct rcu_head *head))
{
	struct rcu_head *old = __atomic_load_n(&retired.pending_heads, __ATOMIC_RELAXED);

	head->func = fn;
	do
		head->next.next = (struct cds_wfcq_node *)(void *)old;
	while (!__atomic_compare_exchange_n(&retired.pending_heads, &old, head, true,
					    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	arm();
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
		batch_rcu(&c->rcu, free_cleaf_rcu);
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
		retire(node, kind_tag(kind) | height_tag(height));
}

/* liburcu's barrier waits for the callbacks queued before it, but a batch
 * pushed before this call may be queued only after it, by the callback of
 * the batch before.  A marker pushed now lands in the same batch as every
 * item pushed before it or in a later one (start_batch()), and batches
 * end in order. */
void idr_rcu_barrier(void)
{
	_Alignas(MEM_ALIGN) struct idr_node mark = { .slots = { NULL } };

	retire(&mark, height_tag(MARK_HEIGHT));
	while (!__atomic_load_n(&mark.slots[0], __ATOMIC_ACQUIRE)) {
		urcu_bp_barrier();
		sched_yield(); /* the batch may be between two call_rcu()s */
	}
}

void idr_synchronize_rcu(void)
{
	urcu_bp_synchronize_rcu();
}

/* A caller's idr_rcu_head holds an rcu_head at its start, which the batches
 * link through and call, and the caller's callback after it, which
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
	batch_rcu((struct rcu_head *)(void *)head->idr_urcu, run_deferred);
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
	pthread_mutex_lock(&queue_lock);
	urcu_bp_before_fork();
}

void idr_fork_parent(void)
{
	urcu_bp_after_fork_parent();
	pthread_mutex_unlock(&queue_lock);
	urcu_bp_call_rcu_after_fork_parent();
}

/* queue_lock is made new before liburcu starts the child's worker, which
 * takes it in batch_done(). */
void idr_fork_child(void)
{
	urcu_bp_after_fork_child();
	pthread_mutex_init(&queue_lock, NULL);
	urcu_bp_call_rcu_after_fork_child();
}
