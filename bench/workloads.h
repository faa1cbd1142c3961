/* SPDX-License-Identifier: MIT */
/*
 * The ID-table workloads, written once and instantiated per backend (BE is
 * the backend's prefix), so every backend's operations are inlined into the
 * same loops: libidr's are calls into the library, as for its users.
 *
 * A backend provides BE_create, BE_destroy, BE_settle (wait for deferred
 * frees), BE_alloc(t, ptr, start, end) -> lowest free ID in [start, end) or
 * < 0, BE_cyclic(t, ptr, end, &cursor), BE_key(t, id) -> what lookups pass,
 * BE_find(t, key), BE_next(t, &id) -> the entry of the lowest ID >= id (id
 * set to it) or NULL, and BE_remove(t, id).
 */
#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define F(name) CAT(BE, name)

/* Every entry in ID order: ns taken, their pointers' sum in *@sum and
 * their number in *@seen. */
static long F(iterate)(void *t, uint64_t *sum, long *seen)
{
	long t0 = now_ns();
	void *p;

	*sum = 0;
	*seen = 0;
	for (long id = 0; (p = F(next)(t, &id)) != NULL; id++) {
		*sum += (uintptr_t)p;
		++*seen;
	}
	return now_ns() - t0;
}

/* One repetition of the core workloads; results in @r, false if any result
 * was wrong. */
static bool F(core)(const struct plan *pl, struct sample *r)
{
	long n = pl->n, t0;
	bool ok = true;
	uint64_t sum = 0;
	long h0 = heap_bytes();
	void *t = F(create)();

	t0 = now_ns();
	for (long i = 0; i < n; i++)
		VERIFY(F(alloc)(t, &pl->obj[i], 0, LONG_MAX) == i);
	r->v[M_DENSE] = (double)(now_ns() - t0) / (double)n;
	F(settle)();
	r->v[M_BYTES_DENSE] = (double)(heap_bytes() - h0) / (double)n;
	r->v[M_SELF_DENSE] = (double)F(self)(t) / (double)n;

	for (long i = 0; i < n; i++) {
		pl->key_seq[i] = F(key)(t, i);
		pl->obj[i].next = 0;
	}
	for (long i = 0; i < n; i++) {
		pl->key_rand[i] = pl->key_seq[pl->perm[i]];
		pl->obj[i].next = pl->key_seq[pl->chain[i]];
	}
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		sum += (uintptr_t)F(find)(t, pl->key_seq[i]);
	r->v[M_SEQ] = (double)(now_ns() - t0) / (double)n;
	VERIFY(sum == pl->obj_sum);
	sum = 0;
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		sum += (uintptr_t)F(find)(t, pl->key_rand[i]);
	r->v[M_RAND] = (double)(now_ns() - t0) / (double)n;
	VERIFY(sum == pl->obj_sum);
	/* Each lookup's key comes from the object the previous one found. */
	uint64_t key = pl->key_seq[0];
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		key = ((const struct obj *)F(find)(t, key))->next;
	r->v[M_CHAIN] = (double)(now_ns() - t0) / (double)n;
	VERIFY(key == pl->key_seq[0]); /* one cycle through every ID */
	long seen;
	r->v[M_ITER] = (double)F(iterate)(t, &sum, &seen) / (double)n;
	VERIFY(sum == pl->obj_sum && seen == n);

	if (!F(removes)) {
		F(destroy)(t);
		F(settle)();
		return ok;
	}
	/* Remove a random half, then the lowest free IDs must come back in
	 * ascending order. */
	long half = n / 2;
	t0 = now_ns();
	for (long j = 0; j < half; j++)
		VERIFY(F(remove)(t, pl->perm[j]) == &pl->obj[pl->perm[j]]);
	for (long j = 0; j < half; j++)
		VERIFY(F(alloc)(t, &pl->obj[pl->sorted_half[j]], 0, LONG_MAX) ==
		      pl->sorted_half[j]);
	r->v[M_HALF] = (double)(now_ns() - t0) / (double)n;

	/* Remove a random 99%: what do the survivors cost?  Then refill. */
	long gone = n - n / 100;
	for (long j = 0; j < gone; j++)
		VERIFY(F(remove)(t, pl->perm[j]) != NULL);
	F(settle)();
	r->v[M_BYTES_SPARSE] = (double)(heap_bytes() - h0) / (double)(n - gone);
	r->v[M_SELF_SPARSE] = (double)F(self)(t) / (double)(n - gone);
	uint64_t left_sum = 0;
	for (long j = gone; j < n; j++)
		left_sum += (uintptr_t)&pl->obj[pl->perm[j]];
	r->v[M_ITER_SPARSE] = (double)F(iterate)(t, &sum, &seen) / (double)(n - gone);
	VERIFY(sum == left_sum && seen == n - gone);
	t0 = now_ns();
	for (long j = 0; j < gone; j++)
		VERIFY(F(alloc)(t, &pl->obj[pl->sorted_gone[j]], 0, LONG_MAX) ==
		      pl->sorted_gone[j]);
	r->v[M_REFILL] = (double)(now_ns() - t0) / (double)gone;
	F(destroy)(t);
	F(settle)();
	/* Back exactly to where it started (settle waits for liburcu's own
	 * trailing frees too). */
	VERIFY(heap_bytes() == h0);

	/* Cyclic: a window of live IDs slides round [0, n/2). */
	long range = n / 2, live = range / 2, last = -1;
	unsigned cursor = 0;
	t = F(create)();
	for (long i = 0; i < live; i++)
		VERIFY((last = F(cyclic)(t, &pl->obj[i], range, &cursor)) == i);
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		long oldest = (last + range - live + 1) % range;
		VERIFY(F(remove)(t, oldest) != NULL);
		long want = (last + 1) % range;
		VERIFY((last = F(cyclic)(t, &pl->obj[want], range, &cursor)) == want);
	}
	r->v[M_CYCLIC] = (double)(now_ns() - t0) / (double)n;
	F(destroy)(t);
	F(settle)();
	return ok;
}

/* Dense allocation and random lookup only, for the plot against N. */
static void F(scaling)(const struct plan *pl, long n, double *alloc_ns,
		       double *find_ns)
{
	void *t = F(create)();
	uint64_t sum = 0;
	long t0 = now_ns();

	for (long i = 0; i < n; i++)
		F(alloc)(t, &pl->obj[i], 0, LONG_MAX);
	*alloc_ns = (double)(now_ns() - t0) / (double)n;
	for (long i = 0; i < n; i++)
		pl->key_seq[i] = F(key)(t, pl->scale_perm[i] % n);
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		sum += (uintptr_t)F(find)(t, pl->key_seq[i]);
	*find_ns = (double)(now_ns() - t0) / (double)n;
	if (!sum)
		abort();
	F(destroy)(t);
	F(settle)();
}

#undef F
#undef CAT
#undef CAT2
