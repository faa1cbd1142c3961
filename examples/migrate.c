/* SPDX-License-Identifier: MIT */
/* The same job with the old API and the new one; see docs/migration.md. */
#include <idr.h>
#include <pthread.h>
#include <stdio.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static int add_old(struct idr *idr, void *obj, int *retries)
{
	int id, err;

	do {
		if (!idr_pre_get(idr, IDR_GFP_KERNEL))
			return -ENOMEM;
		idr_lock(idr);
		err = idr_get_new_above(idr, obj, 1, &id);
		idr_unlock(idr);
		*retries += err == -EAGAIN;
	} while (err == -EAGAIN);
	return err ? err : id;
}
#pragma GCC diagnostic pop

static int add_new(struct idr *idr, void *obj)
{
	idr_preload(IDR_GFP_KERNEL);
	idr_lock(idr);
	int id = idr_alloc(idr, obj, 1, 0, IDR_GFP_NOWAIT);
	idr_unlock(idr);
	idr_preload_end();
	return id;
}

int main(void)
{
	static int obj;
	struct idr old_idr, new_idr;
	int retries = 0, same = 1;

	idr_init(&old_idr);
	idr_init(&new_idr);
	for (int i = 0; i < 10000; i++) {
		int a = add_old(&old_idr, &obj, &retries);
		int b = add_new(&new_idr, &obj);
		same &= a == b;
	}
	printf("old API: 10000 IDs, %d -EAGAIN retries\n", retries);
	printf("new API: 10000 IDs, no retry loop; same IDs: %s\n", same ? "yes" : "no");
	idr_destroy(&old_idr);
	idr_destroy(&new_idr);
	return same ? 0 : 1;
}
