/* SPDX-License-Identifier: MIT */
/* A small test harness and a counting, fault-injecting allocator. */
#ifndef IDR_TESTUTIL_H
#define IDR_TESTUTIL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "idr.h"

/* The library's own functions, which idr.h's inline ones stand in for:
 * what programs built with IDR_NO_INLINE, without gcc or clang, or against
 * an older header call.  testutil.c, built with IDR_NO_INLINE, calls them
 * (an asm label naming them would reach a TU's own copy of the inline
 * function wherever the compiler emits one, as at -O0). */
void *tu_library_find(const struct idr *idr, unsigned long id);
void tu_library_preload(idr_gfp_t gfp);
void tu_library_preload_end(void);
void tu_library_lock(struct idr *idr);
void tu_library_unlock(struct idr *idr);

/* A lone entry's pointer and offset share one word (a singleton,
 * src/sparse.c) only where pointers have a spare top byte, on 64-bit
 * hosts; on 32-bit ones such an entry takes a compact leaf. */
#define TU_SINGLETONS (UINTPTR_MAX > 0xffffffffu)
/* The compact leaves a singleton costs: none, or one on 32-bit hosts. */
#define TU_SINGLETON_COMPACTS (TU_SINGLETONS ? 0 : 1)
/* IDs past UINT32_MAX can be asked for only where unsigned long is wider. */
#define TU_WIDE_ULONG (ULONG_MAX > 0xffffffffu)

typedef void (*tu_test_fn)(void);
void tu_register(const char *name, tu_test_fn fn);
void tu_fail(const char *file, int line, const char *what);
bool tu_failed(void); /* has the running test failed yet? */

#define TEST(name)                                                          \
	static void name(void);                                             \
	__attribute__((constructor)) static void tu_reg_##name(void)        \
	{                                                                   \
		tu_register(#name, name);                                   \
	}                                                                   \
	static void name(void)

/* On failure: record it and return from the calling function. */
#define CHECK(cond)                                                         \
	do {                                                                \
		if (!(cond)) {                                              \
			tu_fail(__FILE__, __LINE__, #cond);                 \
			return;                                             \
		}                                                           \
	} while (0)

#define CHECK_EQ(a, b)                                                      \
	do {                                                                \
		long long tu_a = (long long)(a), tu_b = (long long)(b);     \
		if (tu_a != tu_b) {                                         \
			char tu_msg[256];                                   \
			snprintf(tu_msg, sizeof(tu_msg), "%s == %s (%lld != %lld)", \
				 #a, #b, tu_a, tu_b);                       \
			tu_fail(__FILE__, __LINE__, tu_msg);                \
			return;                                             \
		}                                                           \
	} while (0)

/* Iteration counts shrink under valgrind (IDR_TEST_QUICK=1). */
long tu_scale(long n);
/* Under ThreadSanitizer (IDR_TEST_TSAN=1) liburcu's uninstrumented grace
 * periods are kept out of the picture. */
bool tu_tsan(void);
/* Under valgrind (IDR_TEST_VALGRIND=1, set by tests/run-all.sh). */
bool tu_valgrind(void);
/* Built with AddressSanitizer (known at compile time). */
bool tu_asan(void);
/* A child forked from a threaded parent cannot start threads: under
 * ThreadSanitizer, or under qemu-user (IDR_TEST_EMULATED=1, set by
 * scripts/cross-check.sh), which fails an assertion of its own. */
bool tu_fork_cannot_thread(void);

/* _exit(@status) from a forked child; under make coverage (TU_COVERAGE),
 * first writing the child's counts, which _exit() skips. */
_Noreturn void tu_child_exit(int status);

/* Hold @idr's lock (taking it first, and so its bias if that is still to
 * be had) while another thread tries to take it: the other must wait, long
 * past any spinning, with *@watch reading @asleep (the idr_lock_busy or
 * idr_lock_word it sleeps on), and get the lock once this thread lets go. */
void tu_hold_against_waiter(struct idr *idr, int *watch, int asleep);

/* A non-NULL pointer value naming the thread @tag that stored it under @id,
 * so a test can tell whose entry it reads; tu_tag_id() recovers the ID. */
void *tu_tag_ptr(unsigned tag, unsigned long id);
unsigned long tu_tag_id(const void *p);

/* Deterministic PRNG (xorshift64*). */
uint64_t tu_rand(uint64_t *state);

/* ---- counting allocator: installed before every test, checked after. ---- */
long tu_live(void);          /* blocks allocated and not yet freed */
long tu_calls(void);         /* alloc calls so far (failed ones included) */
long tu_thread_calls(void);  /* the same, made by this thread */
void tu_fail_call(long k);   /* make the k-th alloc call from now fail; 0: none */
void tu_fail_thread(bool on);/* fail every alloc call this thread makes */
void tu_fail_from(long k);   /* fail the k-th call from now and all later */
void tu_fail_if(bool (*refuse)(size_t size)); /* fail the calls it refuses */
/* While on, freed blocks are zeroed and kept, not given back, so a stale
 * pointer into a freed node reads NULL slots, never a node made since;
 * off gives them all back. */
void tu_hold_freed(bool on);
/* Live blocks once pending RCU frees have run, this thread's stash
 * included. */
long tu_live_after_grace(void);
/* The same once this thread's stash is drained: what an idr holds, as seen
 * by the allocator. */
long tu_settled_live(void);
/* The seed pattern on a handle idr with every allocator call this thread
 * makes under the lock failing: what idr_alloc_handle(@idr, @ptr, @start,
 * 0, IDR_GFP_NOWAIT, @h) returned, and in *@made the allocator calls it
 * made. */
int tu_seed_alloc_handle(struct idr *idr, void *ptr, int start,
			 idr_handle_t *h, long *made);

/* ---- diagnostics captured instead of printed ---- */
void tu_restore_hooks(void); /* the counting allocator and the capture */
int tu_diag_count(void);
const char *tu_diag_last(void);
void tu_diag_reset(void);

#endif
