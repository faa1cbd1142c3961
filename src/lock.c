/* SPDX-License-Identifier: MIT */
/*
 * idr_lock(): the idr's own writer lock, a futex word.
 *
 * Why not a pthread mutex: the seed pattern takes and drops the lock once
 * per ID, and glibc's mutex spends a call through the PLT plus owner and
 * user bookkeeping on each side that a writer lock needs none of; this lock
 * costs an uncontended lock/unlock pair about 3 ns less (make bench, "idr_alloc
 * under idr_lock").  It is the classic three-state futex mutex:
 *   0 free, 1 held, 2 held and someone may be asleep on it,
 * so an unlock only enters the kernel when a waiter may exist.
 */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

enum { UNLOCKED, LOCKED, CONTENDED };

/* Writers hold the lock for a few hundred ns: a short spin usually sees it
 * released and saves two system calls. */
#define SPINS 100

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() ((void)0)
#endif

static void futex_wait(int *word, int val)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake_one(int *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static bool try_take(int *word)
{
	int expect = UNLOCKED;

	return __atomic_compare_exchange_n(word, &expect, LOCKED, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static void lock_slow(int *word)
{
	for (int i = 0; i < SPINS; i++) {
		if (__atomic_load_n(word, __ATOMIC_RELAXED) == UNLOCKED && try_take(word))
			return;
		cpu_relax();
	}
	/* From here on we may sleep, so whoever unlocks must wake us: mark
	 * the word contended.  Taking it this way leaves it CONTENDED even if
	 * no one else waits, which costs at most one spare wake-up. */
	while (__atomic_exchange_n(word, CONTENDED, __ATOMIC_ACQUIRE) != UNLOCKED)
		futex_wait(word, CONTENDED);
}

void idr_lock(struct idr *idr)
{
	if (!try_take(&idr->idr_lock_word))
		lock_slow(&idr->idr_lock_word);
}

void idr_unlock(struct idr *idr)
{
	if (__atomic_exchange_n(&idr->idr_lock_word, UNLOCKED, __ATOMIC_RELEASE) == CONTENDED)
		futex_wake_one(&idr->idr_lock_word);
}
