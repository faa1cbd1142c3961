/* SPDX-License-Identifier: MIT */
/* A reference model of an idr: a sorted array of (id, pointer). */
#ifndef IDR_TEST_MODEL_H
#define IDR_TEST_MODEL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct model_entry {
	uint64_t id;
	void *ptr;
};

struct model {
	struct model_entry *e;
	size_t n, cap;
};

/* Index of the first entry with id >= @id. */
static inline size_t model_lower(const struct model *m, uint64_t id)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->e[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Index of the first entry at or after index @i that holds a pointer, as
 * a walk of the idr would visit it (a NULL reservation is skipped), or
 * m->n. */
static inline size_t model_live_from(const struct model *m, size_t i)
{
	while (i < m->n && !m->e[i].ptr)
		i++;
	return i;
}

static inline struct model_entry *model_get(const struct model *m, uint64_t id)
{
	size_t i = model_lower(m, id);

	return i < m->n && m->e[i].id == id ? &m->e[i] : NULL;
}

/* The lowest id in [@min, @max] not in the model, or UINT64_MAX. */
static inline uint64_t model_lowest_free(const struct model *m, uint64_t min,
					 uint64_t max)
{
	uint64_t cand = min;

	for (size_t i = model_lower(m, min); i < m->n && m->e[i].id == cand; i++)
		cand++;
	return cand <= max ? cand : UINT64_MAX;
}

static inline void model_insert(struct model *m, uint64_t id, void *ptr)
{
	size_t i = model_lower(m, id);

	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 1024;
		m->e = realloc(m->e, m->cap * sizeof(*m->e));
		if (!m->e)
			abort();
	}
	memmove(&m->e[i + 1], &m->e[i], (m->n - i) * sizeof(*m->e));
	m->e[i].id = id;
	m->e[i].ptr = ptr;
	m->n++;
}

static inline void model_delete(struct model *m, uint64_t id)
{
	size_t i = model_lower(m, id);

	memmove(&m->e[i], &m->e[i + 1], (m->n - i - 1) * sizeof(*m->e));
	m->n--;
}

/* An idr_for_each() callback that compares each entry, in order, with the
 * model's non-NULL entries; @data is a struct model_walk. */
struct model_walk {
	const struct model *m;
	size_t i;   /* next model entry */
	int bad;    /* entries that did not match */
};

static inline int model_visit(int id, void *p, void *data)
{
	struct model_walk *w = data;

	w->i = model_live_from(w->m, w->i);
	w->bad += w->i >= w->m->n || w->m->e[w->i].id != (uint64_t)id ||
		  w->m->e[w->i].ptr != p;
	w->i++;
	return 0;
}

static inline void model_free(struct model *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}

#endif
