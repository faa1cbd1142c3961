/* SPDX-License-Identifier: MIT */
/* Shared pieces of the benchmark (bench/README.md). */
#ifndef IDR_BENCH_H
#define IDR_BENCH_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Bytes of heap held now: sum of malloc_usable_size() of live blocks. */
long heap_bytes(void);

static inline long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static inline uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---- medians ---- */

#define MAX_REPEATS 15

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of @v[0..k), k <= MAX_REPEATS, which is left as it was. */
static inline double median(const double *v, int k)
{
	double sorted[MAX_REPEATS];

	memcpy(sorted, v, (size_t)k * sizeof(double));
	qsort(sorted, (size_t)k, sizeof(double), cmp_double);
	return k % 2 ? sorted[k / 2] : (sorted[k / 2 - 1] + sorted[k / 2]) / 2;
}

#endif
