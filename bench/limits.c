/* SPDX-License-Identifier: MIT */
/*
 * make bench-limits: what a random lookup can cost on this machine, by
 * shape, against flat's inlined one-load lookup.  Not a backend: a ladder
 * of lookups over the same keys, from flat inlined to idr_find itself, each
 * step adding one thing a correct library lookup must do.  It answers
 * "which part of idr_find's cost is the data structure, and which is being
 * a call that must re-read what a writer may have replaced"
 * (bench/README.md, "Why targets are missed").
 *
 * The directory steps use a copy of the directory shape libidr had until
 * session 14 (32-bit entries counting 8-byte words from a base, 64 slots a
 * leaf) over leaves of their own, so that only the lookup code differs
 * between steps.  Keys
 * are IDs, as libidr's directory's are.  Two steps use a variant with no
 * base to load: entries count 8-byte words from the directory itself.
 * libidr cannot use it (below, and bench/README.md).  Two use a shape
 * libidr does not have: blocks of leaves laid end to end, found through a
 * directory small enough to stay in L1.  The last uses 64-bit entries
 * that hold a leaf's address less 8 bytes per ID below it, so a slot is
 * entry + 8 * ID: no base, no mask, no add, but twice the directory.  That
 * is libidr's shape since session 14, so idr_find() and the last step
 * should take about the same time.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <idr.h>

#include "bench.h"

/* The library's own idr_find(), which idr.h's inline one stands in for:
 * the link defines library_find as idr_find (Makefile), which an asm label
 * could not do safely (it would reach this file's own copy of the inline
 * function, should the compiler emit one). */
void *library_find(const struct idr *idr, unsigned long id);

#define LEAF_SLOTS 64
#define ENTRY_MARKS 0xfffffffeu /* entries from here up are not leaves */

struct dir {
	size_t cap;
	uintptr_t base;
	uint32_t leaf[];
};

/* What a lookup reads through: a directory or a flat array. */
struct table {
	const struct dir *dir;
	const struct array *array;
	const struct rdir *rdir;
	const struct blocks *blocks[2]; /* leaf stride 512, 536 */
	const struct pdir *pdir;
};

/* Entry k: the address of leaf k's slots less 8 * 64k, so that ID id's
 * slot is at entry + 8 * id; an odd entry is a mark (not a leaf). */
struct pdir {
	size_t cap;
	uintptr_t leaf[];
};

/* Entries are signed distances from the directory in 8-byte words. */
struct rdir {
	size_t cap;
	int32_t leaf[];
};
#define RDIR_MARKS (INT32_MIN + 1) /* entries up to here are not leaves */

struct array {
	size_t cap;
	void *slot[];
};

/* Blocks of BLOCK_LEAVES leaves laid end to end, each leaf @stride bytes:
 * 512 when a leaf is its slots alone, 536 when it carries its free bitmap
 * and RCU head after them, as libidr's nodes did until session 14.  At 1M
 * IDs the directory of block pointers is 4 KiB. */
#define BLOCK_LEAVES 32
#define BLOCK_IDS (BLOCK_LEAVES * LEAF_SLOTS)
struct blocks {
	size_t cap;
	char *block[];
};

static void *slot_of(uintptr_t base, uint32_t e, uint64_t index)
{
	return (void *)(base + 8 * ((uintptr_t)e + index % LEAF_SLOTS));
}

static void *leaf_of(const struct dir *d, uint32_t e, uint64_t index)
{
	return __atomic_load_n((void **)slot_of(d->base, e, index), __ATOMIC_ACQUIRE);
}

/* idr_find()'s directory path, re-reading everything per lookup. */
static inline void *dir_find(const struct table *t, uint64_t id)
{
	const struct dir *d = __atomic_load_n(&t->dir, __ATOMIC_ACQUIRE);
	uint64_t k = id / LEAF_SLOTS;

	if (__builtin_expect(!d || k >= d->cap, 0))
		return NULL;
	uint32_t e = __atomic_load_n(d->leaf + k, __ATOMIC_ACQUIRE);
	return __builtin_expect(e < ENTRY_MARKS, 1) ? leaf_of(d, e, id) : NULL;
}

__attribute__((noinline)) static void *dir_find_call(const struct table *t, uint64_t id)
{
	return dir_find(t, id);
}

/* A flat array that a writer may replace: what the lookup of an RCU-safe
 * growable array must do. */
__attribute__((noinline)) static void *array_find_call(const struct table *t, uint64_t id)
{
	const struct array *a = __atomic_load_n(&t->array, __ATOMIC_ACQUIRE);

	if (__builtin_expect(a && id < a->cap, 1))
		return __atomic_load_n(&a->slot[id], __ATOMIC_ACQUIRE);
	return NULL;
}

static void *rdir_slot(const struct rdir *d, int32_t e, uint64_t id)
{
	uintptr_t word = (uintptr_t)((intptr_t)e + (intptr_t)(id % LEAF_SLOTS));

	return __atomic_load_n((void **)((uintptr_t)d + 8 * word), __ATOMIC_ACQUIRE);
}

/* The directory path with no base to load, every test kept. */
__attribute__((noinline)) static void *rdir_find_call(const struct table *t, uint64_t id)
{
	const struct rdir *d = __atomic_load_n(&t->rdir, __ATOMIC_ACQUIRE);
	uint64_t k = id / LEAF_SLOTS;

	if (__builtin_expect(!d || k >= d->cap, 0))
		return NULL;
	int32_t e = __atomic_load_n(d->leaf + k, __ATOMIC_ACQUIRE);
	return __builtin_expect(e > RDIR_MARKS, 1) ? rdir_slot(d, e, id) : NULL;
}

/* Only the three loads a lookup through a replaceable directory cannot do
 * without: not a correct lookup (no tests at all), a floor. */
__attribute__((noinline)) static void *rdir_floor_call(const struct table *t, uint64_t id)
{
	const struct rdir *d = __atomic_load_n(&t->rdir, __ATOMIC_ACQUIRE);

	return rdir_slot(d, __atomic_load_n(d->leaf + id / LEAF_SLOTS, __ATOMIC_ACQUIRE), id);
}

/* A block's slot, every test kept: the directory, its bounds, the block. */
#define BLOCK_FIND(name, which, stride)                                           \
	__attribute__((noinline)) static void *name(const struct table *t, uint64_t id) \
	{                                                                         \
		const struct blocks *b = __atomic_load_n(&t->blocks[which], __ATOMIC_ACQUIRE); \
		uint64_t k = id / BLOCK_IDS;                                      \
		const char *blk;                                                  \
                                                                                  \
		if (__builtin_expect(!b || k >= b->cap, 0))                       \
			return NULL;                                              \
		blk = __atomic_load_n(b->block + k, __ATOMIC_ACQUIRE);            \
		if (__builtin_expect(!blk, 0))                                    \
			return NULL;                                              \
		/* Bare leaves make a block one array: an AND, no multiply. */   \
		if ((stride) == LEAF_SLOTS * sizeof(void *))                      \
			return __atomic_load_n((void **)blk + id % BLOCK_IDS, __ATOMIC_ACQUIRE); \
		blk += id / LEAF_SLOTS % BLOCK_LEAVES * (stride);                 \
		return __atomic_load_n((void **)blk + id % LEAF_SLOTS, __ATOMIC_ACQUIRE); \
	}
BLOCK_FIND(block512_find_call, 0, 512)
BLOCK_FIND(block536_find_call, 1, 536)

/* The pointer directory, every test kept: the NULL directory, its bound,
 * the mark. */
__attribute__((noinline)) static void *pdir_find_call(const struct table *t, uint64_t id)
{
	const struct pdir *d = __atomic_load_n(&t->pdir, __ATOMIC_ACQUIRE);
	uint64_t k = id / LEAF_SLOTS;

	if (__builtin_expect(!d || k >= d->cap, 0))
		return NULL;
	uintptr_t e = __atomic_load_n(d->leaf + k, __ATOMIC_ACQUIRE);
	if (__builtin_expect(e & 1, 0))
		return NULL;
	return __atomic_load_n((void **)(e + id * sizeof(void *)), __ATOMIC_ACQUIRE);
}

__attribute__((noinline)) static void *flat_find_call(void *const *slot, size_t cap, uint64_t id)
{
	return id < cap ? slot[id] : NULL;
}

enum step {
	FLAT_INLINE,
	FLAT_CALLED,
	ARRAY_CALLED,
	DIR_HOISTED,
	DIR_HOISTED_4_LOADS,
	DIR_INLINE,
	DIR_CALLED,
	IDR_FIND,
	IDR_FIND_CALLED,
	RDIR_CALLED,
	RDIR_FLOOR,
	BLOCKS_512,
	BLOCKS_536,
	POINTER_DIR,
	STEPS
};

static const char *const step_name[STEPS] = {
	"flat array, inlined (the reference)",
	"flat array, called",
	"replaceable array, called (acquire loads, NULL test)",
	"directory, every field read once before the loop",
	"the same, plus 4 L1-hit loads per lookup, off its path",
	"directory, every field re-read per lookup, inlined",
	"directory, every field re-read per lookup, called",
	"idr_find (its inline fast path, as users get it)",
	"idr_find, the library's function (IDR_NO_INLINE_FIND), called",
	"directory with no base to load (entries relative to itself), called",
	"the same, with no tests: 3 loads, not a correct lookup",
	"blocks of 32 leaves of bare slots end to end, 4 KiB directory, called",
	"the same with 536-byte leaves (libidr's until session 14), bitmap and RCU head after the slots",
	"directory of 64-bit entries, slot = entry + 8 * ID (libidr's since session 14), called",
};

struct setup {
	long n;
	const uint64_t *key;
	void **flat;
	const struct table *t;
	const struct idr *idr;
};

/* Each step's loop calls its lookup by name, never through a pointer: an
 * indirect call would be a cost of its own. */
#define EACH_KEY(find)                          \
	for (long i = 0; i < n; i++)            \
		sum += (uintptr_t)find(t, key[i])

static uint64_t run_step(const struct setup *s, enum step step)
{
	const uint64_t *key = s->key;
	const struct table *t = s->t;
	const struct dir *d = t->dir;
	uint64_t sum = 0;
	long n = s->n;

	switch (step) {
	case FLAT_INLINE:
		for (long i = 0; i < n; i++)
			if (key[i] < (uint64_t)n)
				sum += (uintptr_t)s->flat[key[i]];
		break;
	case FLAT_CALLED:
		for (long i = 0; i < n; i++)
			sum += (uintptr_t)flat_find_call(s->flat, (size_t)n, key[i]);
		break;
	case ARRAY_CALLED:
		EACH_KEY(array_find_call);
		break;
	case DIR_HOISTED: {
		const uint32_t *leaf = d->leaf;
		uintptr_t base = d->base;
		for (long i = 0; i < n; i++) {
			sum += (uintptr_t)*(void **)slot_of(base, leaf[key[i] / LEAF_SLOTS], key[i]);
		}
		break;
	}
	case DIR_HOISTED_4_LOADS: {
		const uint32_t *leaf = d->leaf;
		uintptr_t base = d->base;
		for (long i = 0; i < n; i++) {
			uint64_t x = (uintptr_t)__atomic_load_n(&t->array, __ATOMIC_RELAXED) +
				     __atomic_load_n(&d->cap, __ATOMIC_RELAXED) +
				     (uintptr_t)__atomic_load_n(&t->dir, __ATOMIC_RELAXED) +
				     __atomic_load_n(&d->base, __ATOMIC_RELAXED);
			sum += (uintptr_t)*(void **)slot_of(base, leaf[key[i] / LEAF_SLOTS], key[i]) +
			       (x == 1);
		}
		break;
	}
	case DIR_INLINE:
		EACH_KEY(dir_find);
		break;
	case DIR_CALLED:
		EACH_KEY(dir_find_call);
		break;
	case IDR_FIND:
		for (long i = 0; i < n; i++)
			sum += (uintptr_t)idr_find(s->idr, (unsigned long)key[i]);
		break;
	case IDR_FIND_CALLED:
		for (long i = 0; i < n; i++)
			sum += (uintptr_t)library_find(s->idr, (unsigned long)key[i]);
		break;
	case RDIR_CALLED:
		EACH_KEY(rdir_find_call);
		break;
	case RDIR_FLOOR:
		EACH_KEY(rdir_floor_call);
		break;
	case BLOCKS_512:
		EACH_KEY(block512_find_call);
		break;
	case BLOCKS_536:
		EACH_KEY(block536_find_call);
		break;
	case POINTER_DIR:
		EACH_KEY(pdir_find_call);
		break;
	case STEPS:
		break;
	}
	return sum;
}

/* The objects in leaves of libidr's size, seen through a pointer
 * directory. */
static struct pdir *build_pdir(void **obj_of, long n)
{
	long nleaves = (n + LEAF_SLOTS - 1) / LEAF_SLOTS;
	struct pdir *d = malloc(sizeof(*d) + (size_t)nleaves * sizeof(uintptr_t));

	if (!d)
		return NULL;
	d->cap = (size_t)nleaves;
	for (long l = 0; l < nleaves; l++) {
		void **leaf = calloc(1, 520);
		if (!leaf)
			return NULL;
		for (long i = l * LEAF_SLOTS; i < n && i < (l + 1) * LEAF_SLOTS; i++)
			leaf[i % LEAF_SLOTS] = obj_of[i];
		d->leaf[l] = (uintptr_t)leaf - (uintptr_t)l * LEAF_SLOTS * sizeof(void *);
	}
	return d;
}

/* Leaves from malloc, as the library's are, and a directory over them. */
static struct dir *build_dir(void **obj_of, long n, void ***leaves)
{
	long nleaves = (n + LEAF_SLOTS - 1) / LEAF_SLOTS;
	struct dir *d = malloc(sizeof(*d) + (size_t)nleaves * sizeof(uint32_t));

	if (!d)
		return NULL;
	for (long l = 0; l < nleaves; l++)
		if (!(leaves[l] = calloc(LEAF_SLOTS, sizeof(void *))))
			return NULL;
	d->cap = (size_t)nleaves;
	d->base = (uintptr_t)leaves[0] - ((uintptr_t)1 << 31) * 8;
	for (long l = 0; l < nleaves; l++) {
		uintptr_t units = ((uintptr_t)leaves[l] - d->base) / 8;
		if (units >= ENTRY_MARKS || ((uintptr_t)leaves[l] - d->base) % 8)
			return NULL; /* outside the window: rerun */
		d->leaf[l] = (uint32_t)units;
	}
	for (long i = 0; i < n; i++)
		leaves[i / LEAF_SLOTS][i % LEAF_SLOTS] = obj_of[i];
	return d;
}

/* The same leaves seen through an rdir, or NULL if one is too far from it
 * for a 32-bit distance. */
static struct rdir *build_rdir(void ***leaves, long nleaves)
{
	struct rdir *d = malloc(sizeof(*d) + (size_t)nleaves * sizeof(int32_t));

	if (!d)
		return NULL;
	d->cap = (size_t)nleaves;
	for (long l = 0; l < nleaves; l++) {
		intptr_t words = ((intptr_t)leaves[l] - (intptr_t)d) / 8;
		if (words <= RDIR_MARKS || words > INT32_MAX)
			return NULL;
		d->leaf[l] = (int32_t)words;
	}
	return d;
}

/* The same objects in blocks of leaves @stride bytes apart. */
static struct blocks *build_blocks(void **obj_of, long n, size_t stride)
{
	long nblocks = (n + BLOCK_IDS - 1) / BLOCK_IDS;
	struct blocks *b = malloc(sizeof(*b) + (size_t)nblocks * sizeof(char *));

	if (!b)
		return NULL;
	b->cap = (size_t)nblocks;
	for (long k = 0; k < nblocks; k++)
		if (!(b->block[k] = calloc(BLOCK_LEAVES, stride)))
			return NULL;
	for (long i = 0; i < n; i++) {
		char *leaf = b->block[i / BLOCK_IDS] + (size_t)(i / LEAF_SLOTS % BLOCK_LEAVES) * stride;
		((void **)leaf)[i % LEAF_SLOTS] = obj_of[i];
	}
	return b;
}

int main(int argc, char **argv)
{
	long n = 1000000;
	int repeats = 9;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc) {
			n = atol(argv[++i]);
		} else if (!strcmp(argv[i], "-r") && i + 1 < argc) {
			repeats = atoi(argv[++i]);
		} else {
			fprintf(stderr, "usage: %s [-n N] [-r repeats]\n", argv[0]);
			return 2;
		}
	}
	if (n < 1 || n > INT32_MAX || repeats < 1 || repeats > MAX_REPEATS) {
		fprintf(stderr, "limits: need 1 <= N < 2^31 and 1 <= repeats <= %d\n", MAX_REPEATS);
		return 2;
	}

	char *obj = malloc((size_t)n);
	void **flat = malloc((size_t)n * sizeof(void *));
	uint64_t *key = malloc((size_t)n * sizeof(uint64_t));
	void ***leaves = malloc((size_t)((n + LEAF_SLOTS - 1) / LEAF_SLOTS) * sizeof(void **));
	struct array *array = malloc(sizeof(*array) + (size_t)n * sizeof(void *));
	static struct idr idr;
	if (!obj || !flat || !key || !leaves || !array)
		return 1;
	idr_init(&idr);
	array->cap = (size_t)n;
	for (long i = 0; i < n; i++) {
		flat[i] = array->slot[i] = obj + i;
		key[i] = (uint64_t)i;
		if (idr_alloc(&idr, obj + i, 0, 0, IDR_GFP_KERNEL) != i)
			return 1;
	}
	struct dir *d = build_dir(flat, n, leaves);
	struct rdir *rd = d ? build_rdir(leaves, (n + LEAF_SLOTS - 1) / LEAF_SLOTS) : NULL;
	if (!rd) {
		fprintf(stderr, "limits: could not build the directory\n");
		return 1;
	}
	uint64_t seed = 88172645463325252ull;
	for (long i = n - 1; i > 0; i--) {
		long j = (long)(rnd(&seed) % (uint64_t)(i + 1));
		uint64_t k = key[i];
		key[i] = key[j];
		key[j] = k;
	}
	static struct table table;
	table = (struct table){ .dir = d, .array = array, .rdir = rd,
				.blocks = { build_blocks(flat, n, 512), build_blocks(flat, n, 536) },
				.pdir = build_pdir(flat, n) };
	if (!table.blocks[0] || !table.blocks[1] || !table.pdir) {
		fprintf(stderr, "limits: out of memory\n");
		return 1;
	}
	/* Keep the compiler from folding the table's fields into the loops. */
	const struct table *t = &table;
	__asm__ volatile("" : "+r"(t) : : "memory");

	struct setup s = { n, key, flat, t, &idr };
	uint64_t want = run_step(&s, FLAT_INLINE);
	double v[STEPS][MAX_REPEATS];
	bool ok = true;
	for (int r = 0; r < repeats; r++) {
		for (int step = 0; step < STEPS; step++) {
			run_step(&s, step); /* untimed: every table warm alike */
			long t0 = now_ns();
			uint64_t sum = run_step(&s, step);
			v[step][r] = (double)(now_ns() - t0) / (double)n;
			ok &= sum == want;
		}
	}
	printf("## Random lookup by shape: N = %ld, median of %d\n\n", n, repeats);
	printf("| lookup | ns | vs flat inlined |\n|---|---:|---:|\n");
	double ref = 0;
	for (int step = 0; step < STEPS; step++) {
		double med = median(v[step], repeats);
		if (step == FLAT_INLINE)
			ref = med;
		printf("| %s | %.2f | %.2fx |\n", step_name[step], med, med / ref);
	}
	if (!ok)
		fprintf(stderr, "limits: a lookup gave a wrong sum\n");
	return ok ? 0 : 1;
}
