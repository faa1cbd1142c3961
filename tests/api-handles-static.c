/* SPDX-License-Identifier: MIT */
/*
 * A statically initialized handle idr, in a process where no handle idr was
 * initialized before: its first allocation makes idr_preload() stock the
 * larger nodes, and a thread whose stash was already full for plain idrs
 * restocks.  Its own binary, because the first handle idr of a process is
 * what it tests.
 */
#include "testutil.h"

static int obj;
static struct idr handles = IDR_INIT_FLAGS(handles, 0, IDR_F_HANDLES);

TEST(static_handle_idr_is_preloaded_after_its_first_allocation)
{
	DEFINE_IDR(plain);
	idr_handle_t h = 0;

	/* This thread's stash, full for plain idrs only. */
	idr_preload(IDR_GFP_KERNEL);
	idr_preload_end();
	CHECK_EQ(idr_alloc(&plain, &obj, 0, 0, IDR_GFP_KERNEL), 0);
	CHECK_EQ(idr_alloc_handle(&handles, &obj, 0, 0, IDR_GFP_KERNEL, &h), 0);

	/* IDs far apart, so that each needs new nodes of the larger kind. */
	for (int round = 1; round <= 3; round++) {
		long calls;
		CHECK_EQ(tu_seed_alloc_handle(&handles, &obj, round << 24, &h, &calls),
			 round << 24);
		CHECK_EQ(calls, 0);
		CHECK(idr_find_handle(&handles, h) == &obj);
	}
	CHECK_EQ(idr_check(&handles), 0);
	idr_destroy(&handles);
	idr_destroy(&plain);
}
