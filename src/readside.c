/* SPDX-License-Identifier: MIT */
/*
 * The RCU read-side section: liburcu-bp's read lock and unlock, inlined.
 *
 * Why inlined: called in liburcu-bp.so, each of urcu_bp_read_lock() and
 * urcu_bp_read_unlock() reaches the thread's reader state with two
 * __tls_get_addr() calls, about 45 instructions, and a section with one
 * lookup in it was bound by that count (bench/README.md, "Why targets are
 * missed").  liburcu inlines them under _LGPL_SOURCE, which its README
 * allows in LGPL- and GPL-compatible code; libidr's MIT license is.  This
 * file alone defines it, so liburcu's inline code lands in libidr and never
 * comes from idr.h into a caller's code: idr.h keeps these two functions
 * out of line.  The inlined code reads liburcu's reader layout, which
 * liburcu keeps for such code within its soname (liburcu-bp.so.8), though
 * its header asks that such code be rebuilt with each liburcu release
 * (docs/guarantees.md, "libidr against liburcu"; run-rcu checks the two
 * agree).
 *
 * Why the reader pointer is reached through a cached address: it is
 * liburcu-bp.so's thread-local variable, which libidr.so's default TLS
 * model reaches through __tls_get_addr() at each of the inline code's
 * uses (its barriers keep the compiler from reusing the address), so
 * inlining alone saved nothing (an empty section 21-22 ns, as before).
 * Initial-exec reads it through the thread pointer (7-8 ns) but needs
 * liburcu-bp's TLS in the static block, which a dlopen() of libidr.so
 * after liburcu-bp.so was loaded on its own and used cannot have (glibc
 * then fails the dlopen()); TLS descriptors took 15 ns.  So each thread
 * looks the address up once, the default way, and keeps it in libidr's
 * own initial-exec state, and liburcu's inline code reads the variable
 * through it, as it reads it through an accessor function where the
 * platform has no TLS (urcu/tls-compat.h): 7-8 ns, in any load order.
 * The address stays valid for the thread's life: a thread's TLS block
 * does not move, and liburcu-bp.so stays loaded while libidr is: a
 * dependency of whichever object holds libidr, which is never unloaded
 * (src/resident.c).
 */
#define _LGPL_SOURCE /* NOLINT(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp): liburcu's name */
#include <urcu/tls-compat.h>

/* clang's analyzer does not see that urcu_bp_register() fills the variable
 * behind the slot, and reports the read after it as a NULL dereference; it
 * analyzes liburcu's own form, which reads the variable directly. */
#if defined(CONFIG_RCU_TLS) && !defined(__clang_analyzer__)
#define READER_SLOT 1
#endif

#ifdef READER_SLOT
/*
 * The inline code uses the reader only for its counter, so it sees the
 * reader as this: the counter alone, aligned as a long.  liburcu declares
 * its reader aligned to 128 bytes but places readers at smaller steps in
 * its registry, and UBSan, in libidr's sanitized builds, flagged each
 * access through its type as misaligned (liburcu's own, uninstrumented
 * library makes the same accesses).  The slot is named after the variable,
 * so that a use of any other thread-local variable would not compile.
 */
struct urcu_bp_reader;
struct reader_counter {
	unsigned long ctr;
};
static _Thread_local struct urcu_bp_reader **slot_of_urcu_bp_reader
	__attribute__((tls_model("initial-exec")));
#undef URCU_TLS
#define URCU_TLS(name) ((struct reader_counter *)*slot_of_##name)
#endif

#include <stddef.h>
#include <urcu-bp.h>

#include "idr.h"

#ifdef READER_SLOT
_Static_assert(offsetof(struct urcu_bp_reader, ctr) == 0 &&
		       _Generic(((struct urcu_bp_reader *)NULL)->ctr, unsigned long: 1, default: 0),
	       "liburcu-bp's reader starts with its unsigned long counter");
#endif

void idr_rcu_read_lock(void)
{
#ifdef READER_SLOT
	if (__builtin_expect(!slot_of_urcu_bp_reader, 0))
		slot_of_urcu_bp_reader = &urcu_bp_reader;
#endif
	urcu_bp_read_lock();
}

void idr_rcu_read_unlock(void)
{
	urcu_bp_read_unlock();
}
