/* SPDX-License-Identifier: MIT */
/*
 * Memory: the process-wide allocator hook, the per-thread preload stash and
 * the pools that one insertion draws from.
 *
 * Why preload cannot fail the caller: idr_preload() runs before the caller
 * takes its lock and fills this thread's stash with IDR_PRELOAD_NODES nodes,
 * the most that any one insertion needs (growing a height-1 tree to height 6
 * takes 5 new levels plus a 5-node path below them).  Every allocation takes
 * from the stash before it calls the allocator, and the stash belongs to the
 * thread, so no other thread can empty it between the preload and the
 * allocation.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

static void *default_alloc(size_t size, void *ctx)
{
	(void)ctx;
	return malloc(size);
}

static void default_free(void *p, size_t size, void *ctx)
{
	(void)size;
	(void)ctx;
	free(p);
}

static struct idr_allocator allocator = { default_alloc, default_free, NULL };

void idr_set_allocator(const struct idr_allocator *a)
{
	static const struct idr_allocator std = { default_alloc, default_free,
						  NULL };

	allocator = a ? *a : std;
}

/* A block aligned less than MEM_ALIGN would corrupt the tags kept in its
 * address: it goes back, and the caller fails as if out of memory. */
void *mem_alloc(size_t size)
{
	void *p = allocator.alloc(size, allocator.ctx);

	if (p && ((uintptr_t)p & (MEM_ALIGN - 1))) {
		allocator.free(p, size, allocator.ctx);
		return NULL;
	}
	return p;
}

void mem_free(void *p, size_t size)
{
	allocator.free(p, size, allocator.ctx);
}

/* ---------------------------------------------------------------------- */

static void default_diagnostic(const char *func, const char *msg, void *ctx)
{
	(void)ctx;
	(void)fprintf(stderr, "libidr: %s: %s\n", func, msg); /* best effort */
}

static void (*diagnostic)(const char *, const char *, void *) =
	default_diagnostic;
static void *diagnostic_ctx;

void idr_set_diagnostic(void (*fn)(const char *, const char *, void *),
			void *ctx)
{
	diagnostic = fn ? fn : default_diagnostic;
	diagnostic_ctx = ctx;
}

void report(const char *func, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	/* A message cut at 255 bytes is still a message.  The analyzer's
	 * valist warning is a known false positive on va_start'ed lists. */
	(void)vsnprintf(msg, sizeof(msg), fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
	va_end(ap);
	diagnostic(func, msg, diagnostic_ctx);
}

#ifdef IDR_DEBUG
void writer_overlap(const char *func)
{
	report(func, "two writers inside one idr at once: writers need a lock");
	abort();
}
#endif

/* ---------------------------------------------------------------------- */

/* One shelf of nodes per kind; handle idrs use the larger kind. */
struct shelf {
	struct idr_node *node[IDR_PRELOAD_NODES];
	unsigned count;
};

/* The thread's section depth and whether its stash is full are
 * idr__thread's (idr.h), where the inline idr_preload() reads them; whatever
 * takes from the stash (or asks it for a directory) clears preload_ready. */
struct stash {
	struct shelf shelf[NODE_KINDS];
	bool registered; /* thread-exit destructor armed */
	/* A lookup directory for a NOWAIT allocation to grow into (dir.c):
	 * dir_want is the capacity the last one to go without needed. */
	struct leafdir *dir_spare;
	size_t dir_want;
};

/* initial-exec: the stash is touched twice per preloaded allocation, and
 * the default model for a shared library goes through __tls_get_addr each
 * time.  The price is about 270 bytes of static TLS, which glibc's surplus
 * covers even when libidr is dlopen()ed. */
static _Thread_local struct stash stash __attribute__((tls_model("initial-exec")));

/* initial-exec for the same reason; the inline fast paths in callers
 * reach it the same way. */
__thread struct idr__thread_state idr__thread __attribute__((tls_model("initial-exec")));

/* Which kinds idr_preload() stocks: plain nodes and a compact leaf always,
 * the larger kind once the process has a handle idr.  Never cleared. */
unsigned idr__stocked_kinds = 1u << KIND_PLAIN | 1u << KIND_COMPACT;

/* An insertion takes at most one compact leaf. */
static unsigned shelf_target(unsigned kind)
{
	return kind == KIND_COMPACT ? 1 : IDR_PRELOAD_NODES;
}

void stock_kind(enum node_kind kind)
{
	if (!(__atomic_load_n(&idr__stocked_kinds, __ATOMIC_RELAXED) & (1u << kind)))
		__atomic_fetch_or(&idr__stocked_kinds, 1u << kind, __ATOMIC_RELAXED);
}

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static bool exit_key_made; /* written once, under exit_key_once */

/* Runs on the thread that owns @s (at its exit, or for the main thread at
 * the process's), so idr__thread is that thread's too. */
static void stash_free(struct stash *s)
{
	idr__thread.preload_ready = 0;
	for (unsigned k = 0; k < NODE_KINDS; k++) {
		struct shelf *sh = &s->shelf[k];

		while (sh->count)
			mem_free(sh->node[--sh->count], kind_bytes(k));
	}
	if (s->dir_spare)
		dir_discard(s->dir_spare);
	s->dir_spare = NULL;
	s->dir_want = 0;
}

static void thread_exit(void *arg)
{
	struct stash *s = arg;

	if (idr__thread.preload_depth)
		report("idr_preload", "thread exits inside %u preload section(s)",
		       idr__thread.preload_depth);
	stash_free(s);
}

/* Only a process out of keys (PTHREAD_KEYS_MAX) fails this. */
static void make_exit_key(void)
{
	exit_key_made = pthread_key_create(&exit_key, thread_exit) == 0;
}

/* The main thread's stash: key destructors do not run for it at exit(). */
__attribute__((destructor)) static void process_exit(void)
{
	stash_free(&stash);
}

/* Without a key, idr_preload() goes on all the same (it never fails):
 * exiting threads then keep their stashes, a few KiB each, unless they
 * call idr_preload_drain().  Said once, outside pthread_once(), whose
 * routine must not run the caller's diagnostic hook (which may preload). */
static void arm_thread_exit(void)
{
	static bool told;

	pthread_once(&exit_key_once, make_exit_key);
	if (!exit_key_made && !__atomic_exchange_n(&told, true, __ATOMIC_RELAXED))
		report("idr_preload", "no thread-specific data key left (PTHREAD_KEYS_MAX): "
		       "threads that exit keep their preload stashes");
	stash.registered = exit_key_made && pthread_setspecific(exit_key, &stash) == 0;
}

bool in_preload(void)
{
	return idr__thread.preload_depth != 0;
}

struct leafdir *stash_take_dir(size_t cap)
{
	struct leafdir *d = stash.dir_spare;

	if (!d || d->cap < cap)
		return NULL;
	stash.dir_spare = NULL;
	return d;
}

void stash_want_dir(size_t cap)
{
	idr__thread.preload_ready = 0;
	if (cap > stash.dir_want)
		stash.dir_want = cap;
}

/* Set aside the directory a NOWAIT allocation asked for; on a refusal the
 * wish stays, for the next preload. */
static void stock_dir(void)
{
	size_t want = stash.dir_want;
	struct leafdir *d = stash.dir_spare;

	if (!d || d->cap < want) {
		d = mem_alloc(dir_bytes(want));
		if (!d)
			return;
		d->cap = want;
		if (stash.dir_spare)
			dir_discard(stash.dir_spare);
		stash.dir_spare = d;
	}
	stash.dir_want = 0;
}

/* Top up every shelf idr_preload() stocks; stops at the first refusal.
 * True if the stash ended up full. */
static bool stock_up(unsigned kinds)
{
	if (stash.dir_want)
		stock_dir();
	for (unsigned k = 0; k < NODE_KINDS; k++) {
		struct shelf *sh = &stash.shelf[k];

		while ((kinds >> k & 1) && sh->count < shelf_target(k)) {
			struct idr_node *n = mem_alloc(kind_bytes(k));
			if (!n)
				return false;
			sh->node[sh->count++] = n;
		}
	}
	return !stash.dir_want;
}

/* Registration and restocking, out of line: idr_preload()'s common case
 * (idr__preload_fast(), idr.h) is one compare on the thread's state.
 * @kinds is never 0 and only gains bits: a stash found full for the kinds
 * of old is not full for a new kind. */
__attribute__((noinline, cold)) void idr__preload_slow(unsigned kinds)
{
	if (!stash.registered)
		arm_thread_exit();
	idr__thread.preload_ready = stock_up(kinds) && stash.registered ? kinds : 0;
}

__attribute__((noinline, cold)) void idr__preload_unmatched(void)
{
	report("idr_preload_end", "called without a matching idr_preload()");
#ifdef IDR_DEBUG
	abort();
#endif
}

void idr_preload(idr_gfp_t gfp)
{
	(void)gfp; /* userspace allocators have no non-blocking mode to pick */
	idr__preload_fast();
}

void idr_preload_end(void)
{
	idr__preload_end_fast();
}

void idr_preload_drain(void)
{
	stash_free(&stash);
}

/* ---------------------------------------------------------------------- */

/* Take from @sh, else from the allocator. */
static void *shelf_or_alloc(struct shelf *sh, unsigned kind)
{
	if (!sh->count)
		return mem_alloc(kind_bytes(kind));
	idr__thread.preload_ready = 0;
	return sh->node[--sh->count];
}

static void give_back(struct shelf *sh, unsigned kind, void *n, bool from_stash)
{
	if (from_stash && sh->count < IDR_PRELOAD_NODES)
		sh->node[sh->count++] = n;
	else
		mem_free(n, kind_bytes(kind));
}

/* Give back the full nodes a pool_fill() that failed had gathered, the
 * first @from_stash of which came from the stash: those to the stash, the
 * rest to the allocator, so a failed call leaves memory exactly as it
 * found it.  (The compact leaf is gathered last, so a failed fill never
 * holds one.) */
static void pool_return(struct node_pool *pool, unsigned from_stash)
{
	struct shelf *sh = &stash.shelf[pool->kind];

	for (unsigned i = 0; i < pool->count; i++)
		give_back(sh, pool->kind, pool->node[i], i < from_stash);
	pool->count = 0;
}

/* Gather what one insertion needs: @need.full nodes of @kind and maybe a
 * compact leaf, the stash's first, then the allocator's.  All or nothing:
 * on failure everything goes back where it came from. */
int pool_fill(struct node_pool *pool, enum node_kind kind, struct insert_need need)
{
	struct shelf *sh = &stash.shelf[kind];

	/* The stash's nodes are taken first: the first `shelved` are its. */
	unsigned shelved = sh->count;

	pool->kind = kind;
	pool->count = 0;
	pool->cleaf = NULL;
	while (pool->count < need.full) {
		struct idr_node *n = shelf_or_alloc(sh, kind);
		if (!n) {
			pool_return(pool, shelved);
			return -ENOMEM;
		}
		pool->node[pool->count++] = n;
	}
	if (need.compact) {
		pool->cleaf = shelf_or_alloc(&stash.shelf[KIND_COMPACT], KIND_COMPACT);
		if (!pool->cleaf) {
			pool_return(pool, shelved);
			return -ENOMEM;
		}
	}
	return 0;
}

struct cleaf *pool_take_cleaf(struct node_pool *pool)
{
	struct cleaf *c = pool->cleaf;

	pool->cleaf = NULL;
	return c;
}

struct idr_node *pool_take(struct node_pool *pool)
{
	return pool->node[--pool->count];
}
