/* SPDX-License-Identifier: MIT */
/*
 * Lockless readers beside a writer: reader threads look connections up by
 * ID with no lock at all while a writer opens and closes them.
 *
 * What makes that safe is three rules, each marked below:
 * 1. A reader uses what idr_find() returns only inside the RCU read-side
 *    section it found it in.
 * 2. The writer publishes an object only once it is complete: it reserves
 *    the ID with a NULL pointer (readers find NULL there), fills in the
 *    object, which needs its ID, and then installs it with idr_replace().
 * 3. The writer frees what idr_remove() returned only after a grace
 *    period, when no reader can still hold it: idr_call_rcu() does that
 *    without waiting.
 *
 * Each reader checks every connection it finds: the ID it was found under
 * is its own, and it is open (a callback marks it closed just before the
 * free).  The program fails if any reader ever saw otherwise.
 */
#include <errno.h>
#include <idr.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define READERS 2
#define MAX_OPEN 1000  /* connections open at once */
#define OPENS 200000   /* connections the writer opens (and closes) */

enum { OPEN = 1, CLOSED = 2 };

struct conn {
	int id;
	atomic_int state;
	struct idr_rcu_head rcu;
};

static DEFINE_IDR(conns);
static atomic_bool writer_done;
static atomic_long freed;

/* A cache line each, so that the readers share nothing they write. */
struct reader_stats {
	_Alignas(64) unsigned seed;
	long lookups, found, wrong;
};

/* xorshift: rand() is not thread-safe. */
static unsigned next_random(unsigned *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void *reader(void *arg)
{
	struct reader_stats *st = arg;

	while (!atomic_load(&writer_done)) {
		int id = (int)(next_random(&st->seed) % (2 * MAX_OPEN));

		idr_rcu_read_lock();
		struct conn *c = idr_find(&conns, (unsigned long)id);
		if (c) {
			/* Rule 1: c is only touched inside the section. */
			st->found++;
			st->wrong += c->id != id || atomic_load(&c->state) != OPEN;
		}
		idr_rcu_read_unlock();
		st->lookups++;
	}
	return NULL;
}

static void free_conn(struct idr_rcu_head *head)
{
	struct conn *c = (struct conn *)((char *)head - offsetof(struct conn, rcu));

	atomic_store(&c->state, CLOSED);
	free(c);
	atomic_fetch_add(&freed, 1);
}

static int open_conn(void)
{
	struct conn *c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;

	/* Rule 2: reserve the ID; readers find NULL under it for now. */
	idr_preload(IDR_GFP_KERNEL);
	idr_lock(&conns);
	int id = idr_alloc(&conns, NULL, 0, 0, IDR_GFP_NOWAIT);
	idr_unlock(&conns);
	idr_preload_end();
	if (id < 0) {
		free(c);
		return id;
	}
	c->id = id;
	atomic_init(&c->state, OPEN);
	/* Complete: publish it.  Readers that find it from now on see it
	 * whole (idr_replace() stores with release order). */
	idr_lock(&conns);
	idr_replace(&conns, c, (unsigned long)id);
	idr_unlock(&conns);
	return id;
}

static void close_conn(int id)
{
	idr_lock(&conns);
	struct conn *c = idr_remove(&conns, (unsigned long)id);
	idr_unlock(&conns);
	/* Rule 3: a reader may have found c just before the removal. */
	idr_call_rcu(&c->rcu, free_conn);
}

int main(void)
{
	static int open_ids[MAX_OPEN];
	struct reader_stats st[READERS];
	pthread_t t[READERS];
	unsigned seed = 12345;
	int open = 0;
	long opened = 0;

	for (int i = 0; i < READERS; i++) {
		st[i] = (struct reader_stats){ .seed = 2463534242u + (unsigned)i };
		pthread_create(&t[i], NULL, reader, &st[i]);
	}
	/* The writer: keep the table between half and fully open, closing at
	 * random. */
	while (opened < OPENS) {
		if (open < MAX_OPEN && (open < MAX_OPEN / 2 || next_random(&seed) % 2)) {
			int id = open_conn();
			if (id < 0) {
				fprintf(stderr, "open failed: %d\n", id);
				return 1;
			}
			open_ids[open++] = id;
			opened++;
		} else {
			int k = (int)(next_random(&seed) % (unsigned)open);
			close_conn(open_ids[k]);
			open_ids[k] = open_ids[--open];
		}
	}
	atomic_store(&writer_done, true);

	long lookups = 0, found = 0, wrong = 0;
	for (int i = 0; i < READERS; i++) {
		pthread_join(t[i], NULL);
		lookups += st[i].lookups;
		found += st[i].found;
		wrong += st[i].wrong;
	}
	printf("writer: opened %ld connections, closed %ld, %d still open\n",
	       opened, opened - open, open);
	printf("readers: %ld lookups, %ld found a connection, %ld saw one "
	       "half-built or closed\n", lookups, found, wrong);

	/* Tear down.  No reader is left, so what is still open can go at once;
	 * then wait for the callbacks of the connections closed before. */
	struct conn *c;
	int id;
	idr_lock(&conns);
	idr_for_each_entry(&conns, c, id)
		free(c);
	idr_destroy(&conns);
	idr_unlock(&conns);
	idr_rcu_barrier();
	printf("freed after a grace period: %ld of %ld closed\n",
	       atomic_load(&freed), opened - open);
	return wrong || atomic_load(&freed) != opened - open;
}
