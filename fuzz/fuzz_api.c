/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the input is a program of operations over one idr and
 * one ida (every public entry point, preload sections, allocator failures at
 * chosen calls), each result checked against a reference model, and the
 * structure checked with idr_check()/ida_check() after every operation.
 * Any disagreement aborts, which libFuzzer reports as a crash.
 *
 * fuzz/replay.c runs the same function over the checked-in corpus, so every
 * input that once found a bug is replayed by `make check`.
 */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* old API too */
#include <stdio.h>
#include <stdlib.h>

#include "../src/internal.h" /* the sizes of nodes and directories */
#include "../tests/model.h"
#include "idr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_ASSERT(cond)                                                    \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "fuzz_api.c:%d: op %u: %s\n", __LINE__, \
				op_no, #cond);                             \
			abort();                                           \
		}                                                          \
	} while (0)

static unsigned op_no;

/* ---- input decoding: an exhausted input reads as zeros ---- */

struct input {
	const uint8_t *p, *end;
};

static unsigned get8(struct input *in)
{
	return in->p < in->end ? *in->p++ : 0;
}

static uint32_t get32(struct input *in)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v = v << 8 | get8(in);
	return v;
}

/* An ID from the places where the tree has edges: small IDs, leaf and
 * node boundaries, INT_MAX and UINT32_MAX. */
static uint64_t get_id(struct input *in)
{
	static const uint64_t anchors[] = {
		0, 64, 4096, 262144, 1u << 24, 1u << 30, INT_MAX, UINT32_MAX,
	};
	unsigned sel = get8(in);
	int delta = (int)get8(in) - 128;
	int64_t id;

	if (sel < 128)
		return sel;
	if (sel == 255)
		return get32(in);
	id = (int64_t)anchors[sel % 8] + delta;
	return id < 0 ? 0 : (uint64_t)id;
}

/* A start or end as an int, negative ones included. */
static int get_int(struct input *in)
{
	unsigned sel = get8(in);

	if (sel == 250)
		return -1;
	if (sel == 251)
		return INT_MIN;
	if (sel == 252)
		return 0;
	uint64_t id = get_id(in);
	return id > INT_MAX ? INT_MAX : (int)id;
}

/* ---- the allocator: counts blocks, fails chosen calls ----
 * Blocks freed on another thread are the ones RCU deferred (liburcu's
 * call_rcu thread frees them), so they are counted apart: an input without
 * RCU must give back on this thread everything it took, and the deferred
 * frees are reconciled in bulk after an occasional grace-period barrier. */

static _Thread_local bool fuzz_thread;
static long calls, fail_at, fired, allocs, frees_here, deferred_frees;
static bool fail_all;

/* Could @size be a lookup directory's?  No node's size can (DIR_MIN_CAP). */
static bool directory_sized(size_t size)
{
	size_t step = DIR_MIN_CAP * sizeof(uintptr_t);

	return size >= dir_bytes(0) && (size - dir_bytes(0)) % step == 0;
}

/* A refused directory fails nothing (the allocation goes without it), so
 * only refused nodes count as fired. */
static void *fz_alloc(size_t size, void *ctx)
{
	(void)ctx;
	calls++;
	if (fail_all || calls == fail_at) {
		fired += !directory_sized(size);
		return NULL;
	}
	void *p = malloc(size);
	allocs += p != NULL;
	return p;
}

static void fz_free(void *p, size_t size, void *ctx)
{
	(void)size;
	(void)ctx;
	if (fuzz_thread)
		frees_here++;
	else
		__atomic_add_fetch(&deferred_frees, 1, __ATOMIC_RELAXED);
	free(p);
}

static long held(void)
{
	return allocs - frees_here;
}

/* Blocks handed to call_rcu() by inputs so far; every 64 inputs that used
 * RCU, wait for the grace periods and check that all of them came back. */
static void reconcile_deferred(long handed_over)
{
	static long expected, rcu_inputs;

	expected += handed_over;
	if (++rcu_inputs % 64)
		return;
	idr_rcu_barrier();
	FZ_ASSERT(__atomic_load_n(&deferred_frees, __ATOMIC_RELAXED) == expected);
}

static int diags;

static void fz_diag(const char *func, const char *msg, void *ctx)
{
	(void)ctx;
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "diagnostic: %s: %s\n", func, msg);
	diags++;
}

/* ---- the model ---- */

struct state {
	struct idr idr;
	struct ida ida;
	struct model m;     /* the idr's entries */
	struct model ida_m; /* the ida's IDs */
	struct model hm;    /* IDR_F_HANDLES: each live ID's generation (as ptr:
			     * a whole handle would not fit in a 32-bit one) */
	idr_handle_t ring[32]; /* recently issued handles, many soon stale */
	unsigned ring_n, clock;
	unsigned base, flags, cursor;
	unsigned preload_depth;
	bool used_rcu;
	uint64_t serial;
};

static void *new_ptr(struct state *s, struct input *in)
{
	unsigned sel = get8(in) % 8;

	if (sel == 0)
		return NULL; /* a reservation */
	/* Now and then an odd pointer, which no singleton word can hold. */
	return (void *)(uintptr_t)(++s->serial << 4 | (sel == 1));
}

static void state_init(struct state *s, unsigned sel)
{
	static const unsigned bases[] = { 0, 1, 64, 1u << 20 };

	s->base = bases[sel % 4];
	/* Mostly without RCU, whose frees are checked only in bulk. */
	s->flags = (sel % 8 == 7 ? 0 : IDR_F_NO_RCU) | (sel & 8 ? IDR_F_HANDLES : 0);
	s->used_rcu |= !(s->flags & IDR_F_NO_RCU);
	s->cursor = 0;
	s->clock = 0;
	s->ring_n = 0;
	idr_init_flags(&s->idr, (int)s->base, s->flags);
}

/* The lowest free ID in [@min, @max] of the idr, honoring the base. */
static uint64_t want_idr(const struct state *s, uint64_t min, uint64_t max)
{
	if (min < s->base)
		min = s->base;
	return min > max ? UINT64_MAX : model_lowest_free(&s->m, min, max);
}

/* A call that may allocate: it returns -ENOMEM exactly when one of its
 * allocator calls failed, not counting a refused directory's (fz_alloc()). */
static void check_enomem(int err, long fired_before)
{
	FZ_ASSERT((err == -ENOMEM) == (fired != fired_before));
}

/* A handle idr stamps each allocation with the next clock tick (never 0). */
static idr_handle_t note_alloc(struct state *s, uint64_t id)
{
	if (!(s->flags & IDR_F_HANDLES))
		return 0;
	s->clock = s->clock + 1 ? s->clock + 1 : 1;
	idr_handle_t h = idr_handle_make((uint32_t)id, s->clock);
	model_insert(&s->hm, id, (void *)(uintptr_t)s->clock);
	s->ring[s->ring_n++ % 32] = h;
	FZ_ASSERT(idr_handle_of(&s->idr, id) == h);
	return h;
}

static void note_remove(struct state *s, uint64_t id)
{
	model_delete(&s->m, id);
	if (model_get(&s->hm, id))
		model_delete(&s->hm, id);
}

static void record_alloc(struct state *s, int err, uint64_t want, uint64_t got,
			 void *ptr, long fired_before)
{
	check_enomem(err, fired_before);
	if (err == -ENOMEM)
		return;
	if (want == UINT64_MAX) {
		FZ_ASSERT(err == -ENOSPC);
		return;
	}
	FZ_ASSERT(err == 0 && got == want);
	model_insert(&s->m, want, ptr);
	note_alloc(s, want);
}

static void op_alloc(struct state *s, struct input *in)
{
	int start = get_int(in), end = get_int(in);
	void *ptr = new_ptr(s, in);
	long f = fired;
	int id = idr_alloc(&s->idr, ptr, start, end, IDR_GFP_KERNEL);

	if (start < 0) {
		FZ_ASSERT(id == -EINVAL);
		return;
	}
	uint64_t max = end > 0 ? (uint64_t)end - 1 : INT_MAX;
	record_alloc(s, id < 0 ? id : 0, want_idr(s, (uint64_t)start, max),
		     (uint64_t)id, ptr, f);
}

static void op_alloc_u32(struct state *s, struct input *in)
{
	uint32_t next = (uint32_t)get_id(in), max = (uint32_t)get_id(in);
	uint32_t in_next = next;
	void *ptr = new_ptr(s, in);
	long f = fired;
	int err = idr_alloc_u32(&s->idr, ptr, &next, max, IDR_GFP_KERNEL);

	if (err)
		FZ_ASSERT(next == in_next);
	record_alloc(s, err, want_idr(s, in_next, max), next, ptr, f);
}

static void op_alloc_cyclic(struct state *s, struct input *in)
{
	int start = get_int(in), end = get_int(in);
	void *ptr = new_ptr(s, in);
	long f = fired;
	int id = idr_alloc_cyclic(&s->idr, ptr, start, end, IDR_GFP_KERNEL);

	if (start < 0) {
		FZ_ASSERT(id == -EINVAL);
		return;
	}
	uint64_t max = end > 0 ? (uint64_t)end - 1 : INT_MAX;
	uint64_t from = s->cursor > (unsigned)start ? s->cursor : (unsigned)start;
	uint64_t want = want_idr(s, from, max);
	if (want == UINT64_MAX && from > (unsigned)start)
		want = want_idr(s, (uint64_t)start, max);
	record_alloc(s, id < 0 ? id : 0, want, (uint64_t)id, ptr, f);
	if (id >= 0)
		s->cursor = (unsigned)id + 1;
	FZ_ASSERT(idr_get_cursor(&s->idr) == s->cursor);
}

static void op_get_new(struct state *s, struct input *in)
{
	int start = get_int(in), id = -1;
	void *ptr = new_ptr(s, in);
	long c = calls;

	if (get8(in) & 1) {
		long f = fired;
		int ok = idr_pre_get(&s->idr, IDR_GFP_KERNEL);
		FZ_ASSERT(ok == (fired == f));
		c = calls;
	}
	int err = idr_get_new_above(&s->idr, ptr, start, &id);
	FZ_ASSERT(calls == c); /* the old API never allocates here */
	if (start < 0) {
		FZ_ASSERT(err == -EINVAL);
		return;
	}
	uint64_t want = want_idr(s, (uint64_t)start, INT_MAX);
	if (err == -EAGAIN)
		return; /* reserve too small: nothing changed (checked later) */
	if (want == UINT64_MAX) {
		FZ_ASSERT(err == -ENOSPC);
		return;
	}
	FZ_ASSERT(err == 0 && (uint64_t)id == want);
	model_insert(&s->m, want, ptr);
	note_alloc(s, want);
}

/* The seed pattern: after a preload, an allocation cannot fail for lack of
 * memory even if every allocator call fails. */
static void op_preloaded_alloc(struct state *s, struct input *in)
{
	int start = get_int(in);
	void *ptr = new_ptr(s, in);
	bool saved = fail_all;

	if (start < 0)
		start = 0;
	fail_all = false;
	long keep_fail_at = fail_at;
	fail_at = 0;
	idr_preload(IDR_GFP_KERNEL);
	fail_all = true;
	long c = calls;
	int id = idr_alloc(&s->idr, ptr, start, 0, IDR_GFP_NOWAIT);
	FZ_ASSERT(calls == c);
	idr_preload_end();
	fail_all = saved;
	fail_at = keep_fail_at;
	record_alloc(s, id < 0 ? id : 0, want_idr(s, (uint64_t)start, INT_MAX),
		     (uint64_t)id, ptr, fired);
}

static void op_remove(struct state *s, struct input *in)
{
	uint64_t id = get_id(in);
	struct model_entry *e = model_get(&s->m, id);
	/* It may ask for a smaller leaf, and cope with a refusal. */
	void *got = idr_remove(&s->idr, id);

	FZ_ASSERT(got == (e ? e->ptr : NULL));
	if (e)
		note_remove(s, id);
}

static void op_alloc_handle(struct state *s, struct input *in)
{
	int start = get_int(in), end = get_int(in);
	void *ptr = new_ptr(s, in);
	idr_handle_t h = 1;
	long f = fired;
	int id = idr_alloc_handle(&s->idr, ptr, start, end, IDR_GFP_KERNEL, &h);

	if (start < 0 || !(s->flags & IDR_F_HANDLES)) {
		FZ_ASSERT(id == -EINVAL && h == 1);
		return;
	}
	uint64_t max = end > 0 ? (uint64_t)end - 1 : INT_MAX;
	record_alloc(s, id < 0 ? id : 0, want_idr(s, (uint64_t)start, max),
		     (uint64_t)id, ptr, f);
	FZ_ASSERT(id < 0 ? h == 1 : h == s->ring[(s->ring_n - 1) % 32]);
}

/* find/remove/replace by a recent handle, or a forged one: a handle acts
 * only if it is its ID's current one. */
static void op_handle_call(struct state *s, struct input *in)
{
	unsigned sel = get8(in), call = get8(in) % 3;
	idr_handle_t h = s->ring_n && sel < 200 ?
				 s->ring[sel % (s->ring_n < 32 ? s->ring_n : 32)] :
				 idr_handle_make((uint32_t)get_id(in), get8(in));
	uint64_t id = idr_handle_id(h);
	struct model_entry *cur = model_get(&s->hm, id);
	struct model_entry *e = model_get(&s->m, id);
	bool current = cur && idr_handle_make((uint32_t)id, (uint32_t)(uintptr_t)cur->ptr) == h;
	long c = calls;

	if (call == 0) {
		FZ_ASSERT(idr_find_handle(&s->idr, h) == (current ? e->ptr : NULL));
	} else if (call == 1) {
		void *got = idr_remove_handle(&s->idr, h);
		FZ_ASSERT(got == (current ? e->ptr : NULL));
		if (current)
			note_remove(s, id);
	} else {
		void *ptr = new_ptr(s, in), *got = idr_replace_handle(&s->idr, ptr, h);
		FZ_ASSERT(got == (current ? e->ptr : IDR_ERR_PTR(-ENOENT)));
		if (current)
			e->ptr = ptr;
	}
	FZ_ASSERT(calls == c);
}

static void op_replace(struct state *s, struct input *in)
{
	uint64_t id = get_id(in);
	struct model_entry *e = model_get(&s->m, id);
	void *ptr = new_ptr(s, in);
	long f = fired;
	void *got = idr_replace(&s->idr, ptr, id);

	if (!e) {
		FZ_ASSERT(got == IDR_ERR_PTR(-ENOENT));
		return;
	}
	/* Memory only for an odd pointer into a singleton word. */
	check_enomem(got == IDR_ERR_PTR(-ENOMEM) ? -ENOMEM : 0, f);
	if (got == IDR_ERR_PTR(-ENOMEM))
		return;
	FZ_ASSERT(got == e->ptr);
	e->ptr = ptr;
}

static void op_find(struct state *s, struct input *in)
{
	uint64_t id = get_id(in);
	struct model_entry *e = model_get(&s->m, id);

	FZ_ASSERT(idr_find(&s->idr, id) == (e ? e->ptr : NULL));
}

static void op_get_next(struct state *s, struct input *in)
{
	int id = get_int(in), in_id = id;
	void *got = idr_get_next(&s->idr, &id);
	size_t i = model_live_from(&s->m, model_lower(&s->m, in_id < 0 ? 0 : (uint64_t)in_id));

	if (in_id >= 0 && i < s->m.n && s->m.e[i].id <= INT_MAX) {
		FZ_ASSERT(got == s->m.e[i].ptr && (uint64_t)id == s->m.e[i].id);
	} else {
		FZ_ASSERT(got == NULL && id == in_id);
	}
}

static void op_get_next_ul(struct state *s, struct input *in)
{
	unsigned long id = get_id(in), in_id = id;
	void *got = idr_get_next_ul(&s->idr, &id);
	size_t i = model_live_from(&s->m, model_lower(&s->m, in_id));

	if (i < s->m.n) {
		FZ_ASSERT(got == s->m.e[i].ptr && id == s->m.e[i].id);
	} else {
		FZ_ASSERT(got == NULL && id == in_id);
	}
}

struct walk {
	const struct model *m;
	size_t i;
	int stop_after;
};

static int visit(int id, void *p, void *data)
{
	struct walk *w = data;

	while (w->i < w->m->n && !w->m->e[w->i].ptr)
		w->i++;
	FZ_ASSERT(w->i < w->m->n && w->m->e[w->i].id == (uint64_t)id &&
		  w->m->e[w->i].ptr == p);
	w->i++;
	return --w->stop_after == 0 ? 7 : 0;
}

static void op_for_each(struct state *s, struct input *in)
{
	struct walk w = { &s->m, 0, (int)get8(in) };
	int ret = idr_for_each(&s->idr, visit, &w);

	if (ret)
		FZ_ASSERT(ret == 7 && w.stop_after == 0);
	else
		for (; w.i < s->m.n; w.i++)
			FZ_ASSERT(!s->m.e[w.i].ptr || s->m.e[w.i].id > INT_MAX);
}

static void op_preload(struct state *s, struct input *in)
{
	if (get8(in) & 1 && s->preload_depth < 4) {
		idr_preload(IDR_GFP_KERNEL);
		s->preload_depth++;
	} else if (s->preload_depth) {
		idr_preload_end();
		s->preload_depth--;
	}
}

static void op_faults(struct state *s, struct input *in)
{
	unsigned sel = get8(in);

	(void)s;
	fail_all = sel == 255;
	fail_at = sel && sel < 32 ? calls + sel : 0;
}

static void op_ida_alloc(struct state *s, struct input *in)
{
	uint32_t min = (uint32_t)get_id(in), max = (uint32_t)get_id(in);
	long f = fired;
	int id = ida_alloc_range(&s->ida, min, max, IDR_GFP_KERNEL);
	uint64_t top = max > INT_MAX ? INT_MAX : max;
	uint64_t want = min > top ? UINT64_MAX :
		       model_lowest_free(&s->ida_m, min, top);

	check_enomem(id < 0 ? id : 0, f);
	if (id == -ENOMEM)
		return;
	if (want == UINT64_MAX) {
		FZ_ASSERT(id == -ENOSPC);
		return;
	}
	FZ_ASSERT((uint64_t)id == want);
	model_insert(&s->ida_m, want, NULL);
}

static void op_ida_free(struct state *s, struct input *in)
{
	uint32_t id = (uint32_t)get_id(in);
	bool had = model_get(&s->ida_m, id) != NULL;
	int d = diags;
	long c = calls;

	ida_free(&s->ida, id);
	FZ_ASSERT(calls == c);
	FZ_ASSERT(diags == d + !had); /* freeing a free ID is reported */
	if (had)
		model_delete(&s->ida_m, id);
	FZ_ASSERT(!ida_exists(&s->ida, id));
}

static void op_ida_exists(struct state *s, struct input *in)
{
	uint32_t id = (uint32_t)get_id(in);

	FZ_ASSERT(ida_exists(&s->ida, id) == (model_get(&s->ida_m, id) != NULL));
}

/* The lowest allocated ID in [min, max]: the model's first entry there. */
static void op_ida_find_first(struct state *s, struct input *in)
{
	uint32_t min = (uint32_t)get_id(in), max = (uint32_t)get_id(in);
	uint64_t top = max > INT_MAX ? INT_MAX : max;
	size_t i = model_lower(&s->ida_m, min);
	long c = calls;
	int got = ida_find_first_range(&s->ida, min, max);

	FZ_ASSERT(calls == c);
	if (min > INT_MAX)
		FZ_ASSERT(got == -EINVAL);
	else if (i < s->ida_m.n && s->ida_m.e[i].id <= top)
		FZ_ASSERT(got >= 0 && (uint64_t)got == s->ida_m.e[i].id);
	else
		FZ_ASSERT(got == -ENOENT);
	FZ_ASSERT(ida_find_first(&s->ida) ==
		  (s->ida_m.n ? (int)s->ida_m.e[0].id : -ENOENT));
}

static void op_reset(struct state *s, struct input *in)
{
	idr_destroy(&s->idr);
	FZ_ASSERT(idr_is_empty(&s->idr) && idr_memory_usage(&s->idr) == 0);
	model_free(&s->m);
	model_free(&s->hm);
	state_init(s, get8(in));
}

static void op_cursor(struct state *s, struct input *in)
{
	s->cursor = (unsigned)get_id(in);
	idr_set_cursor(&s->idr, s->cursor);
}

static void (*const ops[])(struct state *, struct input *) = {
	op_alloc,     op_alloc,        op_alloc_u32, op_alloc_cyclic,
	op_get_new,   op_preloaded_alloc, op_remove, op_remove,
	op_replace,   op_find,         op_get_next,  op_for_each,
	op_preload,   op_faults,       op_ida_alloc, op_ida_free,
	op_ida_exists, op_reset,       op_cursor,    op_alloc_handle,
	op_handle_call, op_get_next_ul, op_ida_find_first,
};

/* What both structures must satisfy after every operation. */
static void check_state(struct state *s)
{
	FZ_ASSERT(idr_check(&s->idr) == 0);
	FZ_ASSERT(ida_check(&s->ida) == 0);
	FZ_ASSERT(idr_is_empty(&s->idr) == (s->m.n == 0));
	FZ_ASSERT((idr_memory_usage(&s->idr) == 0) == (s->m.n == 0));
	FZ_ASSERT(ida_is_empty(&s->ida) == (s->ida_m.n == 0));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct idr_allocator counting = { fz_alloc, fz_free, NULL };
	static struct state s; /* static: nothing of it survives an input */
	struct input in = { data, data + size };

	FZ_ASSERT(!directory_sized(kind_bytes(KIND_PLAIN)) &&
		  !directory_sized(kind_bytes(KIND_GEN)) &&
		  !directory_sized(kind_bytes(KIND_COMPACT)) &&
		  !directory_sized(IDA_CHUNK_WORDS * sizeof(uint64_t)));
	idr_set_allocator(&counting);
	idr_set_diagnostic(fz_diag, NULL);
	fuzz_thread = true;
	calls = fail_at = fired = 0;
	fail_all = false;
	long held_before = held();
	memset(&s, 0, sizeof(s));
	state_init(&s, get8(&in));
	ida_init(&s.ida);
	for (op_no = 0; in.p < in.end; op_no++) {
		ops[get8(&in) % (sizeof(ops) / sizeof(ops[0]))](&s, &in);
		check_state(&s);
	}
	/* Whatever the input did, everything comes back. */
	fail_all = false;
	fail_at = 0;
	for (size_t i = 0; i < s.m.n; i++)
		FZ_ASSERT(idr_find(&s.idr, s.m.e[i].id) == s.m.e[i].ptr);
	while (s.preload_depth--)
		idr_preload_end();
	idr_destroy(&s.idr);
	ida_destroy(&s.ida);
	idr_preload_drain();
	if (s.used_rcu)
		reconcile_deferred(held() - held_before);
	else
		FZ_ASSERT(held() == held_before);
	model_free(&s.m);
	model_free(&s.ida_m);
	model_free(&s.hm);
	return 0;
}
