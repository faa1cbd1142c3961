/* SPDX-License-Identifier: MIT */
/* The deprecated API: old semantics, and the failure the new API removes. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <pthread.h>

#include "testutil.h"

static int obj;
#define P ((void *)&obj)

TEST(get_new_hands_out_lowest_ids)
{
	struct idr idr;
	int id;

	idr_init(&idr);
	CHECK_EQ(idr_get_new(&idr, P, &id), -EAGAIN); /* no reserve yet */
	CHECK_EQ(idr_pre_get(&idr, IDR_GFP_KERNEL), 1);
	for (int i = 0; i < 100; i++) {
		CHECK_EQ(idr_get_new(&idr, P, &id), 0);
		CHECK_EQ(id, i);
		CHECK_EQ(idr_pre_get(&idr, IDR_GFP_KERNEL), 1);
	}
	idr_remove(&idr, 7);
	CHECK_EQ(idr_get_new(&idr, P, &id), 0);
	CHECK_EQ(id, 7);
	CHECK_EQ(idr_get_new_above(&idr, P, 50, &id), 0);
	CHECK_EQ(id, 100);
	CHECK_EQ(idr_get_new_above(&idr, P, 1000, &id), 0);
	CHECK_EQ(id, 1000);
	CHECK_EQ(idr_get_new_above(&idr, P, -1, &id), -EINVAL);
	CHECK_EQ(idr_get_new_above(&idr, P, INT_MAX, &id), 0);
	CHECK_EQ(id, INT_MAX);
	CHECK_EQ(idr_get_new_above(&idr, P, INT_MAX, &id), -ENOSPC);
	idr_destroy(&idr); /* frees the reserve too */
}

/* idr_get_new() runs under the caller's lock: it takes nodes from the
 * reserve alone and never calls the allocator, not even for the lookup
 * directory that idr_alloc() grows for a dense idr like this one. */
TEST(get_new_never_calls_the_allocator)
{
	struct idr idr;
	int id;

	idr_init(&idr);
	for (int i = 0; i < 5000; i++) {
		CHECK_EQ(idr_pre_get(&idr, IDR_GFP_KERNEL), 1);
		long calls = tu_thread_calls();
		CHECK_EQ(idr_get_new_above(&idr, P, i % 2 ? 0 : i, &id), 0);
		CHECK_EQ(id, i);
		CHECK_EQ(tu_thread_calls(), calls);
	}
	CHECK_EQ(idr_check(&idr), 0);
	idr_destroy(&idr);
}

/* The old API's flaw: the reserve is the idr's, so a thread that did its
 * idr_pre_get() can find it drained by another thread's insertion. */
TEST(shared_reserve_can_fail_a_caller_that_preloaded_new_api_cannot)
{
	struct idr idr;
	int id;

	idr_init(&idr);
	CHECK_EQ(idr_pre_get(&idr, IDR_GFP_KERNEL), 1);   /* thread A */
	tu_fail_thread(true);                             /* memory is tight */
	CHECK_EQ(idr_pre_get(&idr, IDR_GFP_KERNEL), 1);   /* thread B: already full */
	CHECK_EQ(idr_get_new_above(&idr, P, 1 << 30, &id), 0); /* B takes 6 */
	CHECK_EQ(idr_get_new_above(&idr, P, 1 << 24, &id), -EAGAIN); /* A fails */
	tu_fail_thread(false);
	idr_destroy(&idr);

	/* The same two steps with per-thread preload: neither can fail. */
	idr_init(&idr);
	idr_preload(IDR_GFP_KERNEL);
	tu_fail_thread(true);
	CHECK_EQ(idr_alloc(&idr, P, 1 << 30, 0, IDR_GFP_NOWAIT), 1 << 30);
	tu_fail_thread(false);
	idr_preload_end();
	idr_preload(IDR_GFP_KERNEL);
	tu_fail_thread(true);
	CHECK_EQ(idr_alloc(&idr, P, 1 << 24, 0, IDR_GFP_NOWAIT), 1 << 24);
	tu_fail_thread(false);
	idr_preload_end();
	idr_destroy(&idr);
}

/* The old IDA calls: an exclusive end, 0 for none, and the errors of the
 * kernel's ida_simple_get(). */
TEST(ida_simple_get_takes_an_exclusive_end)
{
	DEFINE_IDA(ida);

	CHECK_EQ(ida_simple_get(&ida, 0, 0, IDR_GFP_KERNEL), 0);
	CHECK_EQ(ida_simple_get(&ida, 0, 2, IDR_GFP_KERNEL), 1);
	CHECK_EQ(ida_simple_get(&ida, 0, 2, IDR_GFP_KERNEL), -ENOSPC); /* 2 excluded */
	CHECK_EQ(ida_simple_get(&ida, 5, 5, IDR_GFP_KERNEL), -ENOSPC);
	CHECK_EQ(ida_simple_get(&ida, 5, 4, IDR_GFP_KERNEL), -ENOSPC);
	CHECK_EQ(ida_simple_get(&ida, 5, 0, IDR_GFP_KERNEL), 5);
	CHECK_EQ(ida_simple_get(&ida, INT_MAX, 0, IDR_GFP_KERNEL), INT_MAX);
	CHECK_EQ(ida_simple_get(&ida, INT_MAX, 0, IDR_GFP_KERNEL), -ENOSPC);
	CHECK_EQ(ida_simple_get(&ida, (unsigned)INT_MAX + 1, 0, IDR_GFP_KERNEL), -EINVAL);
	CHECK_EQ(ida_simple_get(&ida, 7, UINT_MAX, IDR_GFP_KERNEL), 7); /* clamped */
	ida_simple_remove(&ida, 1);
	CHECK(!ida_exists(&ida, 1));
	CHECK_EQ(ida_simple_get(&ida, 0, 10, IDR_GFP_KERNEL), 1);
	ida_simple_remove(&ida, 42); /* not allocated: reported */
	CHECK_EQ(tu_diag_count(), 1);
	CHECK_EQ(ida_check(&ida), 0);
	ida_destroy(&ida);
	CHECK_EQ(ida_memory_usage(&ida), 0);
}
