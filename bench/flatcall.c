/* SPDX-License-Identifier: MIT */
/*
 * flat's lookup compiled apart from its caller, so that calling it costs
 * what calling a library's lookup costs: the bench's "cost of a call" rows
 * (bench/README.md, "Why targets are missed").
 */
#include <stdint.h>

#include "flat.h"

void *flat_find_call(const struct flat *f, size_t id)
{
	return flat_find(f, id);
}
