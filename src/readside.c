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
 * liburcu keeps the same as long as its soname (liburcu-bp.so.8) stays.
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
 * does not move, and liburcu-bp.so stays loaded while libidr is (a
 * dependency of libidr.so, which is never unloaded; of the plugin, for
 * libidr.a in one, whose TLS goes with it).
 */
#define _LGPL_SOURCE
#include <urcu/tls-compat.h>

#ifdef CONFIG_RCU_TLS
/* Named after the variable, so that a use of another would not compile. */
struct urcu_bp_reader;
static _Thread_local struct urcu_bp_reader **slot_of_urcu_bp_reader
	__attribute__((tls_model("initial-exec")));
#undef URCU_TLS
#define URCU_TLS(name) (*slot_of_##name)
#endif

#include <urcu-bp.h>

#include "idr.h"

void idr_rcu_read_lock(void)
{
#ifdef CONFIG_RCU_TLS
	if (__builtin_expect(!slot_of_urcu_bp_reader, 0))
		slot_of_urcu_bp_reader = &urcu_bp_reader;
#endif
	urcu_bp_read_lock();
}

void idr_rcu_read_unlock(void)
{
	urcu_bp_read_unlock();
}
