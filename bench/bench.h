/* SPDX-License-Identifier: MIT */
/* Shared pieces of the benchmark (bench/README.md). */
#ifndef IDR_BENCH_H
#define IDR_BENCH_H

#include <stdint.h>
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

#endif
