/* SPDX-License-Identifier: MIT */
/*
 * Exhaustive fault injection over a scripted workload that touches every
 * allocating entry point: for each step of the script, and for every k up
 * to the number of allocator calls the step makes, replay the script up to
 * that step, fail the step's k-th call, and check that
 *   - the step reports -ENOMEM (or, inside a preload, succeeds from the
 *     stash), never anything else;
 *   - the idr and ida still equal their models, pass idr_check/ida_check
 *     and hold exactly the blocks they held before, the thread's preload
 *     stash included;
 *   - the rest of the script then runs normally and everything is freed.
 */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* old API too */
#include "model.h"
#include "testutil.h"

struct world {
	struct idr idr;
	struct ida ida;
	struct model m, im;
	uint64_t serial;
};

static void *next_ptr(struct world *w)
{
	return (void *)(uintptr_t)(++w->serial << 4);
}

/* Record a successful idr allocation of @id, or pass an error through. */
static int took(struct world *w, int err, uint64_t id, void *ptr)
{
	if (!err)
		model_insert(&w->m, id, ptr);
	return err;
}

static int s_alloc(struct world *w, int start)
{
	void *p = next_ptr(w);
	int id = idr_alloc(&w->idr, p, start, 0, IDR_GFP_KERNEL);

	return took(w, id < 0 ? id : 0, (uint64_t)id, p);
}

static int s_alloc_null(struct world *w, int start)
{
	int id = idr_alloc(&w->idr, NULL, start, 0, IDR_GFP_KERNEL);

	return took(w, id < 0 ? id : 0, (uint64_t)id, NULL);
}

static int s_alloc_u32(struct world *w, int below_max)
{
	uint32_t id = UINT32_MAX - (uint32_t)below_max;
	void *p = next_ptr(w);
	int err = idr_alloc_u32(&w->idr, p, &id, UINT32_MAX, IDR_GFP_KERNEL);

	return took(w, err, id, p);
}

static int s_alloc_cyclic(struct world *w, int start)
{
	void *p = next_ptr(w);
	int id = idr_alloc_cyclic(&w->idr, p, start, 0, IDR_GFP_KERNEL);

	return took(w, id < 0 ? id : 0, (uint64_t)id, p);
}

/* The seed pattern; the step's failures land inside idr_preload(). */
static int s_preloaded(struct world *w, int start)
{
	void *p = next_ptr(w);

	idr_preload(IDR_GFP_KERNEL);
	idr_lock(&w->idr);
	int id = idr_alloc(&w->idr, p, start, 0, IDR_GFP_NOWAIT);
	idr_unlock(&w->idr);
	idr_preload_end();
	return took(w, id < 0 ? id : 0, (uint64_t)id, p);
}

static int s_old_api(struct world *w, int start)
{
	void *p = next_ptr(w);
	int id = -1; /* idr_get_new_above() sets it only on success */

	if (!idr_pre_get(&w->idr, IDR_GFP_KERNEL))
		return -ENOMEM;
	int err = idr_get_new_above(&w->idr, p, start, &id);
	return took(w, err, (uint64_t)id, p);
}

static int s_remove(struct world *w, int id)
{
	struct model_entry *e = model_get(&w->m, (uint64_t)id);
	void *want = e ? e->ptr : NULL;

	if (e)
		model_delete(&w->m, (uint64_t)id);
	return idr_remove(&w->idr, (unsigned long)id) == want ? 0 : -EIO;
}

static int s_replace(struct world *w, int id)
{
	struct model_entry *e = model_get(&w->m, (uint64_t)id);
	void *p = next_ptr(w), *old = idr_replace(&w->idr, p, (unsigned long)id);

	if (!e)
		return old == IDR_ERR_PTR(-ENOENT) ? 0 : -EIO;
	if (old != e->ptr)
		return -EIO;
	e->ptr = p;
	return 0;
}

static int s_ida_alloc(struct world *w, int min)
{
	int id = ida_alloc_min(&w->ida, (unsigned)min, IDR_GFP_KERNEL);

	if (id >= 0)
		model_insert(&w->im, (uint64_t)id, NULL);
	return id < 0 ? id : 0;
}

static int s_ida_free(struct world *w, int id)
{
	ida_free(&w->ida, (unsigned)id);
	if (model_get(&w->im, (uint64_t)id))
		model_delete(&w->im, (uint64_t)id);
	return 0;
}

struct step {
	int (*fn)(struct world *w, int arg);
	int arg;
	int repeat;
};

static const struct step script[] = {
	{ s_alloc, 0, 70 },             /* a root leaf, then a second level */
	{ s_alloc_null, 0, 1 },         /* a reservation */
	{ s_alloc, 1 << 20, 2 },        /* two more levels */
	{ s_alloc, 100000, 1 },         /* a new path in the middle */
	{ s_alloc, INT_MAX - 1, 2 },    /* the top of the int range */
	{ s_alloc, INT_MAX, 1 },        /* -ENOSPC: full at the top */
	{ s_alloc_u32, 1, 2 },          /* height 6 */
	{ s_alloc_cyclic, 5000, 3 },
	{ s_preloaded, 1 << 26, 2 },
	{ s_old_api, 300000, 2 },
	{ s_replace, 70, 1 },           /* publish the reservation */
	{ s_replace, 71, 1 },           /* -ENOENT */
	{ s_remove, 1 << 20, 1 },
	{ s_remove, 5, 1 },
	{ s_alloc, 0, 1 },              /* takes 5 again */
	{ s_ida_alloc, 0, 1100 },       /* two bitmaps */
	{ s_ida_alloc, 1 << 24, 2 },    /* a new path */
	{ s_ida_alloc, INT_MAX, 2 },    /* -ENOSPC on the second */
	{ s_ida_free, 1023, 1 },
	{ s_ida_alloc, 0, 1 },          /* takes 1023 again */
	{ s_remove, 0, 1 },
	{ s_alloc, 1 << 30, 1 },        /* grows once the root has room */
};
#define STEPS (sizeof(script) / sizeof(script[0]))

static int run_step(struct world *w, size_t i)
{
	int err = 0;

	for (int r = 0; r < script[i].repeat && !err; r++)
		err = script[i].fn(w, script[i].arg);
	return err;
}

/* The world equals its models, through the API and structurally. */
static bool consistent(struct world *w)
{
	struct model_walk wk = { &w->m, 0, 0 };

	idr_for_each(&w->idr, model_visit, &wk);
	if (wk.bad || idr_check(&w->idr) || ida_check(&w->ida))
		return false;
	for (size_t i = 0; i < w->m.n; i++)
		if (idr_find(&w->idr, w->m.e[i].id) != w->m.e[i].ptr)
			return false;
	for (size_t i = 0; i < w->im.n; i++)
		if (!ida_exists(&w->ida, (unsigned)w->im.e[i].id))
			return false;
	return true;
}

/* Without RCU, so that freed nodes are counted at once: the freeing paths
 * are the same, only the moment of the free() differs. */
static void world_init(struct world *w)
{
	memset(w, 0, sizeof(*w));
	idr_init_flags(&w->idr, 0, IDR_F_NO_RCU);
	ida_init(&w->ida);
}

static void world_destroy(struct world *w)
{
	idr_destroy(&w->idr);
	ida_destroy(&w->ida);
	model_free(&w->m);
	model_free(&w->im);
}

/* Did step @i, whose k-th allocator call failed with result @err, keep
 * the world as it was, the thread's stash (drained before the step) too?
 * A failed call gives the allocator back what it took from it, and the
 * stash what it took from the stash.  A step that repeats its operation may have succeeded some times first:
 * those are in the model, so the model check covers it, and only a single
 * operation can be held to "nothing moved". */
static bool unchanged(struct world *w, size_t i, int err, size_t n, size_t in,
		      size_t mem, size_t imem, long live)
{
	if (err != -ENOMEM || script[i].repeat > 1)
		return true;
	return w->m.n == n && w->im.n == in && idr_memory_usage(&w->idr) == mem &&
	       ida_memory_usage(&w->ida) == imem && tu_live_after_grace() == live;
}

/* Step @i with its k-th allocator call failing.  Returns 1 if the call was
 * reached and handled cleanly, 0 if the step made fewer than k calls, -1
 * on any fault. */
static int fail_step_at(size_t i, long k, const int *want)
{
	long start_live = tu_settled_live();
	struct world w;

	world_init(&w);
	for (size_t j = 0; j < i; j++)
		run_step(&w, j);
	long live = tu_settled_live(), calls = tu_calls();
	size_t n = w.m.n, in = w.im.n;
	size_t mem = idr_memory_usage(&w.idr), imem = ida_memory_usage(&w.ida);

	tu_fail_call(k);
	int err = run_step(&w, i);
	bool reached = tu_calls() - calls >= k;
	tu_fail_call(0);

	/* Reached: -ENOMEM, or success when the stash or reserve covered it. */
	bool ok = reached ? err == -ENOMEM || err == want[i] : err == want[i];
	ok = ok && unchanged(&w, i, err, n, in, mem, imem, live) && consistent(&w);
	/* The world stays usable; after a failure the later results may shift. */
	for (size_t j = i + 1; j < STEPS && ok; j++)
		ok = run_step(&w, j) == want[j] || err == -ENOMEM;
	ok = ok && consistent(&w);
	world_destroy(&w);
	ok = ok && tu_settled_live() == start_live;
	if (!ok)
		fprintf(stderr, "    step %zu, call %ld: result %d\n", i, k, err);
	return !ok ? -1 : reached;
}

TEST(every_allocation_failure_in_the_script_is_clean)
{
	int want[STEPS];
	struct world w;
	long points = 0;

	/* The fault-free run defines each step's expected result. */
	world_init(&w);
	for (size_t i = 0; i < STEPS; i++) {
		want[i] = run_step(&w, i);
		CHECK(consistent(&w));
	}
	CHECK_EQ(want[5], -ENOSPC);
	CHECK_EQ(want[17], -ENOSPC);
	world_destroy(&w);
	CHECK_EQ(tu_settled_live(), 0);

	for (size_t i = 0; i < STEPS; i++) {
		for (long k = 1;; k++) {
			int r = fail_step_at(i, k, want);
			CHECK(r >= 0);
			if (r == 0)
				break;
			points++;
		}
	}
	CHECK_EQ(tu_settled_live(), 0);
	printf("    %ld fault-injection points over %zu steps\n", points, STEPS);
	CHECK(points >= 60); /* one per allocator call the script makes */
}
