/* SPDX-License-Identifier: MIT */
/*
 * The seed workflow under fire: threads preload (allocator works), take the
 * lock, allocate with NOWAIT while every allocator call they make under the
 * lock fails, unlock, end the section.  Not one -ENOMEM may come back, no ID
 * may be handed out twice, and the final tree must equal what the threads
 * recorded.
 */
#include <pthread.h>
#include <stdlib.h>

#include "testutil.h"

#define THREADS 4

struct worker {
	struct idr *idr;
	long iters;
	int *live;      /* IDs this thread holds */
	long nlive;
	long enomem, other_errors, dup, lock_calls;
	unsigned tag;
};

static void *seed_worker(void *arg)
{
	struct worker *w = arg;

	for (long i = 0; i < w->iters; i++) {
		idr_preload(IDR_GFP_KERNEL);
		idr_lock(w->idr);
		tu_fail_thread(true);
		long calls = tu_thread_calls();
		/* a placeholder that is replaced below once the ID is known */
		int id = idr_alloc(w->idr, NULL, 0, 0, IDR_GFP_NOWAIT);
		if (id >= 0 && idr_replace(w->idr, tu_tag_ptr(w->tag, (unsigned)id), (unsigned)id))
			w->dup++; /* the slot must have held our NULL */
		w->lock_calls += tu_thread_calls() - calls;
		/* A removal may ask for a smaller leaf; it copes with a refusal,
		 * so its calls are not counted. */
		int drop = -1;
		if (i % 3 == 2 && w->nlive) {
			long k = (long)(((uint64_t)i * 2654435761u) % (uint64_t)w->nlive);
			drop = w->live[k];
			w->live[k] = w->live[--w->nlive];
			if (idr_remove(w->idr, (unsigned)drop) != tu_tag_ptr(w->tag, (unsigned)drop))
				w->dup++;
		}
		tu_fail_thread(false);
		idr_unlock(w->idr);
		idr_preload_end();
		if (id == -ENOMEM)
			w->enomem++;
		else if (id < 0)
			w->other_errors++;
		else
			w->live[w->nlive++] = id;
	}
	return NULL;
}

static int count_entry(int id, void *p, void *data)
{
	long *n = data;

	(*n)++;
	return p == NULL || tu_tag_id(p) != (unsigned long)id;
}

TEST(seed_pattern_never_fails_under_lock_held_faults)
{
	struct idr idr;
	struct worker w[THREADS];
	pthread_t t[THREADS];
	long iters = tu_scale(100000), total = 0;

	idr_init_flags(&idr, 0, tu_tsan() ? IDR_F_NO_RCU : 0);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .idr = &idr, .iters = iters, .tag = (unsigned)i };
		w[i].live = malloc(sizeof(int) * (size_t)iters);
		CHECK(w[i].live != NULL);
		CHECK_EQ(pthread_create(&t[i], NULL, seed_worker, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_join(t[i], NULL), 0);

	for (int i = 0; i < THREADS; i++) {
		CHECK_EQ(w[i].enomem, 0);
		CHECK_EQ(w[i].other_errors, 0);
		CHECK_EQ(w[i].dup, 0);
		CHECK_EQ(w[i].lock_calls, 0); /* stash only, under the lock */
		for (long k = 0; k < w[i].nlive; k++) {
			int id = w[i].live[k];
			CHECK(idr_find(&idr, (unsigned)id) == tu_tag_ptr(w[i].tag, (unsigned)id));
		}
		total += w[i].nlive;
	}
	long seen = 0;
	CHECK_EQ(idr_for_each(&idr, count_entry, &seen), 0);
	CHECK_EQ(seen, total); /* nothing in the tree that no thread holds */
	/* lowest-free reuse keeps the ID space dense */
	int next = (int)total;
	CHECK(idr_get_next(&idr, &next) == NULL);
	for (int i = 0; i < THREADS; i++)
		free(w[i].live);
	idr_destroy(&idr);
}
