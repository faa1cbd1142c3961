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
 * in a caller's program: idr.h keeps these two functions out of line.
 * The inlined code reads liburcu's reader layout, which liburcu keeps the
 * same as long as its soname (liburcu-bp.so.8) stays.
 *
 * Why initial-exec: the reader pointer is liburcu-bp.so's thread-local
 * variable, which libidr.so's default model would reach through
 * __tls_get_addr() twice per call (liburcu's barriers keep the compiler
 * from reusing the address).  Initial-exec reads it through the thread
 * pointer, as libidr's own thread state is read (preload.c): 7-8 ns an
 * empty section here, against 15 with TLS descriptors and 21 before.  The
 * price: liburcu-bp's 80 bytes of TLS must sit in the static TLS block
 * beside libidr's.  They do whenever libidr.so is loaded at start-up or
 * dlopen()ed together with liburcu-bp.so; a dlopen() of libidr.so after
 * liburcu-bp.so came in on its own and a thread used it fails with "cannot
 * allocate memory in static TLS block" (idr.h, "Plugins").
 */
#define _LGPL_SOURCE
#include <urcu-bp.h>

#include "idr.h"

#ifdef CONFIG_RCU_TLS
extern DECLARE_URCU_TLS(struct urcu_bp_reader *, urcu_bp_reader)
	__attribute__((tls_model("initial-exec")));
#endif

void idr_rcu_read_lock(void)
{
	urcu_bp_read_lock();
}

void idr_rcu_read_unlock(void)
{
	urcu_bp_read_unlock();
}
