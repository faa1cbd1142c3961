/* SPDX-License-Identifier: MIT */
/*
 * idr_lock(): the idr's own writer lock, biased to the first thread that
 * takes it, over a futex word for everyone else.
 *
 * Why biased: most idrs have one writer thread (an event loop, a device's
 * owner), and the seed pattern takes and drops the lock once per ID.  Any
 * lock built on atomic read-modify-writes pays for two of them per pair,
 * and on the machines we measured one costs about as much as a whole
 * idr_alloc() (make bench, "idr_lock + idr_unlock alone").  So the first
 * thread to lock an idr becomes its owner and from then on locks it with
 * plain stores: busy = 1, then a check that no one asked for the lock.
 *
 * The price is paid by the second thread, once per idr.  The owner's store
 * and check may pass each other in the CPU (a store can wait in its store
 * buffer while a later load runs), so the revoker raises the revoke flag
 * and then has the kernel run a full barrier on every CPU running this
 * process (membarrier(2)).  After it, either the revoker sees busy, or the
 * owner sees the flag; the revoker waits for busy to drop, then marks the
 * idr REVOKED and everyone, the owner too, uses the futex word for good.
 * This is the same asymmetric-barrier bargain liburcu's urcu-bp readers,
 * which every lookup here already relies on, strike with membarrier(2).
 *
 * Why REVOKED is forever: re-biasing would give a lock shared by two
 * threads a membarrier (an IPI to each CPU the process runs on) every time
 * its users change.  For the same reason a process that has revoked
 * REVOKE_BUDGET biases stops biasing new idrs: it hands idrs between
 * threads, and the futex word alone is what suits it.
 *
 * The futex word is the classic three-state mutex: 0 free, 1 held, 2 held
 * and someone may be asleep on it, so an unlock only enters the kernel
 * when a waiter may exist.
 *
 * The owner's fast paths are inline in idr.h (idr__lock_fast(),
 * idr__unlock_fast()): callers that lock an idr for every allocation, the
 * seed pattern's users and the IDA, pay no call for them.  So the fields
 * they touch and what they do with them are part of the ABI
 * (docs/guarantees.md); everything here, their slow paths, is not.
 */
#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

enum { UNLOCKED, LOCKED, CONTENDED };

/* Writers hold the lock for tens to hundreds of ns: a short spin usually
 * sees it released and saves two system calls.  The spin backs off, the
 * gap between looks doubling up to SPIN_MAX_GAP pauses: each look pulls the
 * lock's cache line over to the waiter, and a holder that takes the lock
 * again a few ns after dropping it (the seed pattern in a loop) then waits
 * to get the line back.  make bench's seed pattern on 2 threads went from
 * 184-240 ns/ID with a look after every pause to 78-113, where a pthread
 * mutex in the lock's place takes 148-188; a separate loop with some work
 * between allocations had the spin without backoff about 30% slower. */
#define SPIN_PAUSES 100
#define SPIN_MAX_GAP 16

#define REVOKE_BUDGET 64

/* The spin's hint to the core that it waits: on a core with SMT, the
 * sibling runs in the meantime. */
#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__) || (defined(__arm__) && __ARM_ARCH >= 7)
#define cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define cpu_relax() ((void)0)
#endif

/* What idr_lock_owner holds besides an owner's token: NULL (no one has
 * locked the idr yet) or REVOKED. */
static const char revoked_mark;
#define REVOKED ((void *)&revoked_mark)

static void futex_wait(int *word, int val)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(int *word, int count)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

#ifdef IDR_TEST_HOOKS
long (*idr_test_membarrier_hook)(int cmd);
#endif

static long membarrier(int cmd)
{
#ifdef IDR_TEST_HOOKS
	if (idr_test_membarrier_hook)
		return idr_test_membarrier_hook(cmd);
#endif
	return syscall(SYS_membarrier, cmd, 0, 0);
}

/* ---- the futex word ---- */

static bool try_take(int *word)
{
	int expect = UNLOCKED;

	return __atomic_compare_exchange_n(word, &expect, LOCKED, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* Out of line, like everything here: the owner's fast paths, which call
 * these, are inline (idr.h) and need no stack frame. */
__attribute__((noinline)) void idr__word_lock(int *word)
{
	for (int paused = 0, gap = 1; paused < SPIN_PAUSES; paused += gap) {
		if (__atomic_load_n(word, __ATOMIC_RELAXED) == UNLOCKED && try_take(word))
			return;
		for (int k = 0; k < gap; k++)
			cpu_relax();
		if (gap < SPIN_MAX_GAP)
			gap *= 2;
	}
	/* From here on we may sleep, so whoever unlocks must wake us: mark
	 * the word contended.  Taking it this way leaves it CONTENDED even if
	 * no one else waits, which costs at most one spare wake-up. */
	while (__atomic_exchange_n(word, CONTENDED, __ATOMIC_ACQUIRE) != UNLOCKED)
		futex_wait(word, CONTENDED);
}

__attribute__((noinline)) void idr__word_unlock(int *word)
{
	if (__atomic_exchange_n(word, UNLOCKED, __ATOMIC_RELEASE) == CONTENDED)
		futex_wake(word, 1);
}

/* ---- the bias ---- */

static bool barrier_ready;
static pthread_once_t barrier_once = PTHREAD_ONCE_INIT;
static unsigned revocations;

static void register_barrier(void)
{
	long cmds = membarrier(MEMBARRIER_CMD_QUERY);

	barrier_ready = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
			membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

/* May a new owner be given an idr?  Only if a revoker will be able to
 * order itself against it. */
static bool bias_allowed(void)
{
	if (__atomic_load_n(&revocations, __ATOMIC_RELAXED) >= REVOKE_BUDGET)
		return false;
	pthread_once(&barrier_once, register_barrier);
	return barrier_ready;
}

/* A full memory barrier on every thread of the process that is running. */
static void barrier_everywhere(void)
{
	/* The registration belongs to the process (a forked child inherits
	 * it), so the first fails only if membarrier() was taken away since,
	 * by a seccomp filter say, which may still allow the slower global
	 * barrier (a grace period of the kernel's): it orders as much. */
	if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0 ||
	    membarrier(MEMBARRIER_CMD_GLOBAL) == 0)
		return;
	/* Without a barrier the owner could be inside unseen: taking the lock
	 * would break mutual exclusion, and waiting would never end. */
	report("idr_lock", "membarrier() failed after it had worked (%s): "
	       "cannot take a biased lock safely", strerror(errno));
	abort();
}

/* Out of line, so that the owner's unlock needs no stack frame. */
__attribute__((noinline)) void idr__wake_revokers(struct idr *idr)
{
	futex_wake(&idr->idr_lock_busy, INT_MAX);
}

/* Take the bias away from its owner: afterwards no thread enters through
 * it again.  Several threads may revoke at once; each waits its turn. */
static void revoke_bias(struct idr *idr)
{
	int busy;

	__atomic_store_n(&idr->idr_lock_revoke, 1, __ATOMIC_SEQ_CST);
	barrier_everywhere();
	while ((busy = __atomic_load_n(&idr->idr_lock_busy, __ATOMIC_ACQUIRE)))
		futex_wait(&idr->idr_lock_busy, busy);
	if (__atomic_exchange_n(&idr->idr_lock_owner, REVOKED, __ATOMIC_ACQ_REL) != REVOKED)
		__atomic_fetch_add(&revocations, 1, __ATOMIC_RELAXED);
}

/* Everything but the fast paths: the first lock of an idr, revoking,
 * the futex word's spinning and sleeping.  An owner that finds its bias
 * being revoked goes straight to the word and never comes here. */
__attribute__((noinline)) static void lock_slow(struct idr *idr)
{
	void *owner = __atomic_load_n(&idr->idr_lock_owner, __ATOMIC_ACQUIRE);

	if (!owner) {
		/* Claimed for good either way, so that no thread can become
		 * owner while another holds the word. */
		void *claim = bias_allowed() ? ME : REVOKED;
		if (__atomic_compare_exchange_n(&idr->idr_lock_owner, &owner, claim, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			owner = claim;
	}
	if (owner == ME) {
		if (idr__enter_biased(idr))
			return;
	} else if (owner != REVOKED) {
		revoke_bias(idr);
	}
	idr__word_lock(&idr->idr_lock_word);
}

/* Any thread but the owner: the word if the bias is gone, else the first
 * lock or a revocation. */
__attribute__((noinline)) void idr__lock_unowned(struct idr *idr, void *owner)
{
	if (owner == REVOKED && try_take(&idr->idr_lock_word))
		return;
	lock_slow(idr);
}

void idr_lock(struct idr *idr)
{
	idr__lock_fast(idr);
}

void idr_unlock(struct idr *idr)
{
	idr__unlock_fast(idr);
}
