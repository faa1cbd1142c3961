/* SPDX-License-Identifier: MIT */
/*
 * The "flat" reference: what an ID table costs at the physical limit.  A
 * growable pointer array (lookup = a bounds check and one load) plus a
 * two-level bitmap of used slots, so the lowest free ID is found by scanning
 * words, not slots, and a hint skips the full prefix.  It never shrinks.
 * Also used ID-only (no pointer array) as the IDA's reference.
 */
#ifndef IDR_BENCH_FLAT_H
#define IDR_BENCH_FLAT_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct flat {
	void **slot;     /* NULL when ID-only */
	uint64_t *used;  /* bit per ID */
	uint64_t *full;  /* bit per used[] word that is all ones */
	size_t cap;      /* IDs covered: a multiple of 4096 */
	size_t hint;     /* full[] words below this are all ones */
	bool ids_only;
};

static inline void flat_grow(struct flat *f, size_t need)
{
	size_t cap = f->cap ? f->cap : 4096;

	while (cap <= need)
		cap *= 2;
	if (!f->ids_only) {
		f->slot = realloc(f->slot, cap * sizeof(void *));
		memset(f->slot + f->cap, 0, (cap - f->cap) * sizeof(void *));
	}
	f->used = realloc(f->used, cap / 8);
	memset((char *)f->used + f->cap / 8, 0, (cap - f->cap) / 8);
	f->full = realloc(f->full, cap / 512);
	memset((char *)f->full + f->cap / 512, 0, (cap - f->cap) / 512);
	f->cap = cap;
}

/* The lowest free ID >= @start (possibly == cap: beyond the array). */
static inline size_t flat_lowest(const struct flat *f, size_t start)
{
	size_t w = start / 64;

	if (start < f->hint * 4096)
		w = f->hint * 64, start = w * 64;
	if (w >= f->cap / 64)
		return start;
	uint64_t bits = ~f->used[w] & (~(uint64_t)0 << (start % 64));
	if (bits)
		return w * 64 + (size_t)__builtin_ctzll(bits);
	for (size_t i = (w + 1) / 64; i < f->cap / 4096; i++) {
		uint64_t m = ~f->full[i];
		if (i == (w + 1) / 64)
			m &= (w + 1) % 64 ? ~(uint64_t)0 << ((w + 1) % 64) : ~(uint64_t)0;
		if (m) {
			size_t ww = i * 64 + (size_t)__builtin_ctzll(m);
			return ww * 64 + (size_t)__builtin_ctzll(~f->used[ww]);
		}
	}
	return f->cap;
}

static inline long flat_alloc(struct flat *f, void *p, size_t start, size_t end)
{
	size_t id = flat_lowest(f, start);

	if (id >= end)
		return -1;
	if (id >= f->cap)
		flat_grow(f, id);
	size_t w = id / 64;
	f->used[w] |= (uint64_t)1 << (id % 64);
	if (!~f->used[w]) {
		f->full[w / 64] |= (uint64_t)1 << (w % 64);
		while (f->hint < f->cap / 4096 && !~f->full[f->hint])
			f->hint++;
	}
	if (f->slot)
		f->slot[id] = p;
	return (long)id;
}

static inline void *flat_find(const struct flat *f, size_t id)
{
	return id < f->cap ? f->slot[id] : NULL;
}

/* The lowest used ID >= @id, or the capacity if none: a scan of the used
 * bitmap, a word at a time. */
static inline size_t flat_next(const struct flat *f, size_t id)
{
	for (size_t w = id / 64; w * 64 < f->cap; w++) {
		uint64_t bits = f->used[w] & (w == id / 64 ? ~(uint64_t)0 << (id % 64) : ~(uint64_t)0);
		if (bits)
			return w * 64 + (size_t)__builtin_ctzll(bits);
	}
	return f->cap;
}

/* The same, out of line (flatcall.c). */
void *flat_find_call(const struct flat *f, size_t id);

static inline bool flat_test(const struct flat *f, size_t id)
{
	return id < f->cap && (f->used[id / 64] >> (id % 64) & 1);
}

static inline void *flat_remove(struct flat *f, size_t id)
{
	if (!flat_test(f, id))
		return NULL;
	size_t w = id / 64;
	f->used[w] &= ~((uint64_t)1 << (id % 64));
	f->full[w / 64] &= ~((uint64_t)1 << (w % 64));
	if (w / 64 < f->hint)
		f->hint = w / 64;
	void *old = f->slot ? f->slot[id] : NULL;
	if (f->slot)
		f->slot[id] = NULL;
	return old;
}

static inline void flat_free(struct flat *f)
{
	free(f->slot);
	free(f->used);
	free(f->full);
	memset(f, 0, sizeof(*f));
}

#endif
