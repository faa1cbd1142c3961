/* SPDX-License-Identifier: MIT */
/*
 * Heap accounting for the benchmark: the malloc family is interposed so that
 * every backend (libidr through its default allocator, libjudy, the flat
 * array) is measured the same way: the sum of malloc_usable_size() of the
 * blocks it holds.
 */
#include <malloc.h>
#include <stddef.h>

#include "bench.h"

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void __libc_free(void *p);

static long live_bytes;

static void *counted(void *p)
{
	if (p)
		__atomic_add_fetch(&live_bytes, (long)malloc_usable_size(p),
				   __ATOMIC_RELAXED);
	return p;
}

static void uncount(void *p)
{
	if (p)
		__atomic_sub_fetch(&live_bytes, (long)malloc_usable_size(p),
				   __ATOMIC_RELAXED);
}

long heap_bytes(void)
{
	return __atomic_load_n(&live_bytes, __ATOMIC_RELAXED);
}

void *malloc(size_t size)
{
	return counted(__libc_malloc(size));
}

void *calloc(size_t n, size_t size)
{
	return counted(__libc_calloc(n, size));
}

void *realloc(void *p, size_t size)
{
	uncount(p);
	void *q = __libc_realloc(p, size);
	if (!q && size)
		counted(p); /* the old block is still there */
	return counted(q);
}

void free(void *p)
{
	uncount(p);
	__libc_free(p);
}

void *memalign(size_t align, size_t size)
{
	return counted(__libc_memalign(align, size));
}

void *aligned_alloc(size_t align, size_t size)
{
	return counted(__libc_memalign(align, size));
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p = counted(__libc_memalign(align, size));

	if (!p)
		return 12; /* ENOMEM */
	*out = p;
	return 0;
}
