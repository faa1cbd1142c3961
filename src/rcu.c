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
 * release store of NULL or of its replacement) before it calls call_rcu().
 * A reader that can still reach the node loaded the old pointer inside a
 * read-side section that began before the unlink, and the grace period waits
 * for every such section to end.
 */
#include "internal.h"

/* Once a node is unlinked its writer-only word ->free is free to carry
 * what the RCU callback needs: the node's kind, and for a whole subtree its
 * height too. */
static void free_node_rcu(struct rcu_head *head)
{
	struct idr_node *node = caa_container_of(head, struct idr_node, rcu);

	mem_free(node, kind_bytes((enum node_kind)node->free));
}

void node_retire(struct idr *idr, struct idr_node *node)
{
	enum node_kind kind = idr_kind(idr);

	count_add(&idr->idr_nodes, -1);
	if (idr->idr_flags & IDR_F_NO_RCU) {
		mem_free(node, kind_bytes(kind));
		return;
	}
	node->free = kind;
	call_rcu(&node->rcu, free_node_rcu);
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

static void free_subtree_rcu(struct rcu_head *head)
{
	struct idr_node *node = caa_container_of(head, struct idr_node, rcu);

	subtree_free(node, (unsigned)node->free & 0xff,
		     (enum node_kind)(node->free >> 8), NULL);
}

/* A whole detached tree waits for one grace period, not one per node. */
void subtree_retire(struct idr *idr, struct idr_node *node, unsigned height)
{
	enum node_kind kind = idr_kind(idr);

	if (idr->idr_flags & IDR_F_NO_RCU) {
		subtree_free(node, height, kind, NULL);
		return;
	}
	node->free = height | (uint64_t)kind << 8;
	call_rcu(&node->rcu, free_subtree_rcu);
}

void idr_rcu_read_lock(void)
{
	urcu_bp_read_lock();
}

void idr_rcu_read_unlock(void)
{
	urcu_bp_read_unlock();
}

void idr_rcu_barrier(void)
{
	urcu_bp_barrier();
}
