/* SPDX-License-Identifier: MIT */
/*
 * The pre-2013 API as shims over the new core, with its old semantics kept
 * honest: the reserve belongs to the idr (any thread can drain it), and
 * idr_get_new*() never calls the allocator, returning -EAGAIN instead when
 * the reserve cannot cover the insertion.  And the kernel's IDA calls of
 * 2011-2023, ida_simple_get() and ida_simple_remove().
 */
#include <sched.h>

#include "internal.h"

/* The reserve is a list threaded through slots[0].  A spin lock of its own
 * guards it because callers hold their writer lock (possibly idr_lock())
 * around idr_get_new() but not around idr_pre_get(). */
static void reserve_lock(struct idr *idr)
{
	while (__atomic_exchange_n(&idr->idr_reserve_lock, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void reserve_unlock(struct idr *idr)
{
	__atomic_store_n(&idr->idr_reserve_lock, 0, __ATOMIC_RELEASE);
}

static void reserve_push(struct idr *idr, struct idr_node *n)
{
	n->slots[0] = idr->idr_reserve;
	idr->idr_reserve = n;
	idr->idr_reserve_count++;
}

static struct idr_node *reserve_pop(struct idr *idr)
{
	struct idr_node *n = idr->idr_reserve;

	idr->idr_reserve = n->slots[0];
	idr->idr_reserve_count--;
	return n;
}

int idr_pre_get(struct idr *idr, idr_gfp_t gfp)
{
	(void)gfp;
	for (;;) {
		reserve_lock(idr);
		bool full = idr->idr_reserve_count >= IDR_PRELOAD_NODES;
		reserve_unlock(idr);
		if (full)
			return 1;
		struct idr_node *n = mem_alloc(kind_bytes(idr_kind(idr)));
		if (!n)
			return 0;
		reserve_lock(idr);
		reserve_push(idr, n);
		reserve_unlock(idr);
	}
}

static int get_new_above(struct idr *idr, void *ptr, int starting_id, int *id)
{
	struct node_pool pool = { .count = 0, .kind = idr_kind(idr) };

	if (starting_id < 0)
		return -EINVAL;
	reserve_lock(idr);
	while (idr->idr_reserve_count && pool.count < IDR_PRELOAD_NODES)
		pool.node[pool.count++] = reserve_pop(idr);
	reserve_unlock(idr);

	int64_t got = alloc_id(idr, ptr, (uint64_t)starting_id, INT_MAX, &pool);

	reserve_lock(idr);
	while (pool.count)
		reserve_push(idr, pool.node[--pool.count]);
	reserve_unlock(idr);
	if (got < 0)
		return (int)got;
	*id = (int)got;
	return 0;
}

int idr_get_new_above(struct idr *idr, void *ptr, int starting_id, int *id)
{
	return get_new_above(idr, ptr, starting_id, id);
}

int idr_get_new(struct idr *idr, void *ptr, int *id)
{
	return get_new_above(idr, ptr, 0, id);
}

void compat_drain(struct idr *idr)
{
	reserve_lock(idr);
	while (idr->idr_reserve_count)
		mem_free(reserve_pop(idr), kind_bytes(idr_kind(idr)));
	reserve_unlock(idr);
}

int ida_simple_get(struct ida *ida, unsigned int start, unsigned int end,
		   idr_gfp_t gfp)
{
	if (start > INT_MAX)
		return -EINVAL;
	if (end == 0)
		end = (unsigned int)INT_MAX + 1;
	if (end <= start)
		return -ENOSPC;
	return ida_alloc_range(ida, start, end - 1, gfp);
}

void ida_simple_remove(struct ida *ida, unsigned int id)
{
	ida_free(ida, id);
}
