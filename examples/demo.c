/* SPDX-License-Identifier: MIT */
/*
 * The seed workflow: preload outside the lock, allocate inside it with
 * IDR_GFP_NOWAIT (which cannot fail for lack of memory), unlock, end the
 * preload section; then look objects up, remove some, and watch the lowest
 * IDs come back.
 */
#include <idr.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define PER_THREAD 25000

struct session {
	int id;
	int owner;
	struct idr_rcu_head rcu; /* for a free deferred past lockless readers */
};

static DEFINE_IDR(sessions);

static void *open_sessions(void *arg)
{
	int owner = (int)(intptr_t)arg;
	long failures = 0;

	for (int i = 0; i < PER_THREAD; i++) {
		struct session *s = malloc(sizeof(*s));
		if (!s)
			abort();
		s->owner = owner;

		idr_preload(IDR_GFP_KERNEL);   /* may allocate; no lock held */
		idr_lock(&sessions);
		int id = idr_alloc(&sessions, s, 1, 0, IDR_GFP_NOWAIT);
		if (id >= 0)
			s->id = id;
		idr_unlock(&sessions);
		idr_preload_end();

		if (id < 0) {
			failures++;
			free(s);
		}
	}
	return (void *)(intptr_t)failures;
}

static void free_session(struct idr_rcu_head *head)
{
	free((char *)head - offsetof(struct session, rcu));
}

static int count_owner(int id, void *p, void *data)
{
	struct session *s = p;
	long *per_owner = data;

	if (s->id != id)
		return -1;
	per_owner[s->owner]++;
	return 0;
}

int main(void)
{
	pthread_t t[THREADS];
	long failures = 0, per_owner[THREADS] = { 0 };

	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, open_sessions, (void *)(intptr_t)i);
	for (int i = 0; i < THREADS; i++) {
		void *ret;
		pthread_join(t[i], &ret);
		failures += (intptr_t)ret;
	}
	printf("allocated %d sessions from %d threads, %ld failures\n",
	       THREADS * PER_THREAD, THREADS, failures);

	/* Lookups: lockless inside an RCU read-side section. */
	idr_rcu_read_lock();
	if (idr_for_each(&sessions, count_owner, per_owner)) {
		printf("lookup mismatch!\n");
		return 1;
	}
	struct session *s42 = idr_find(&sessions, 42);
	idr_rcu_read_unlock();
	for (int i = 0; i < THREADS; i++)
		printf("  thread %d owns %ld sessions\n", i, per_owner[i]);
	printf("session 42 belongs to thread %d\n", s42->owner);
	printf("memory: %zu bytes for %d IDs (%.2f bytes/ID)\n",
	       idr_memory_usage(&sessions), THREADS * PER_THREAD,
	       (double)idr_memory_usage(&sessions) / (THREADS * PER_THREAD));

	/* Close every session whose ID is a multiple of 1000.  A lockless
	 * reader may have found one just before its removal, so it is freed
	 * only after a grace period, when every such reader is done. */
	int closed = 0;
	idr_lock(&sessions);
	for (int id = 1000; id <= THREADS * PER_THREAD; id += 1000) {
		struct session *gone = idr_remove(&sessions, (unsigned)id);
		if (gone)
			idr_call_rcu(&gone->rcu, free_session);
		closed++;
	}
	idr_unlock(&sessions);
	printf("closed %d sessions (IDs 1000, 2000, ...)\n", closed);

	/* New sessions get the lowest free IDs: the holes just made. */
	printf("next three new sessions get IDs:");
	for (int i = 0; i < 3; i++) {
		struct session *s = malloc(sizeof(*s));
		if (!s)
			abort();
		idr_preload(IDR_GFP_KERNEL);
		idr_lock(&sessions);
		s->id = idr_alloc(&sessions, s, 1, 0, IDR_GFP_NOWAIT);
		s->owner = 0;
		idr_unlock(&sessions);
		idr_preload_end();
		printf(" %d", s->id);
	}
	printf("\n");

	/* Tear down: free our objects, then the idr's nodes. */
	struct session *s;
	int id;
	idr_lock(&sessions);
	idr_for_each_entry(&sessions, s, id)
		free(s);
	idr_destroy(&sessions);
	idr_unlock(&sessions);
	idr_rcu_barrier();
	printf("destroyed: %s, %zu bytes left\n",
	       idr_is_empty(&sessions) ? "empty" : "NOT empty",
	       idr_memory_usage(&sessions));
	return failures ? 1 : 0;
}
