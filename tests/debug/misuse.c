/* SPDX-License-Identifier: MIT */
/*
 * Misuse that IDR_DEBUG builds catch, one scenario per run (argv[1]); the
 * caller (tests/debug-build.sh) expects an abort with a diagnostic for each
 * misuse and a clean exit for "correct".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idr.h"

static struct idr idr;
static int nested;

/* An allocator that, once, calls back into the idr it is allocating for:
 * a second writer inside the first, as two unlocked threads would be. */
static void *reentrant_alloc(size_t size, void *ctx)
{
	(void)ctx;
	if (nested++ == 0)
		idr_remove(&idr, 0);
	return malloc(size);
}

static void plain_free(void *p, size_t size, void *ctx)
{
	(void)size;
	(void)ctx;
	free(p);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "correct";

	idr_init(&idr);
	if (!strcmp(what, "overlapping-writers")) {
		static const struct idr_allocator a = { reentrant_alloc,
							plain_free, NULL };
		idr_set_allocator(&a);
		idr_alloc(&idr, &idr, 0, 0, IDR_GFP_KERNEL);
	} else if (!strcmp(what, "unmatched-preload-end")) {
		idr_preload_end();
	} else {
		/* Each writer entry point, each followed by another: one that
		 * left the idr marked as inside a writer would be reported. */
		int id;
		idr_preload(IDR_GFP_KERNEL);
		idr_alloc(&idr, NULL, 0, 0, IDR_GFP_NOWAIT);
		idr_preload_end();
		idr_replace(&idr, &idr, 0);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
		if (!idr_pre_get(&idr, IDR_GFP_KERNEL) || idr_get_new(&idr, &idr, &id))
			return 1;
#pragma GCC diagnostic pop
		idr_remove(&idr, (unsigned long)id);
		idr_remove(&idr, 0);
		idr_destroy(&idr);
		idr_alloc(&idr, &idr, 0, 0, IDR_GFP_KERNEL);
	}
	idr_destroy(&idr);
	idr_rcu_barrier();
	idr_set_allocator(NULL);
	return 0;
}
