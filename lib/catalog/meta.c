/*
 * Reading the dataset's metadata buffer (meta.h): checking it once, then
 * resolving paths in it. Allocation-free, for the interposer.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "meta.h"

#define LAYOUT                                              \
	((uint32_t)sizeof(struct nopfs_meta_header) << 24 | \
	 (uint32_t)sizeof(struct nopfs_meta_dir) << 16 |    \
	 (uint32_t)sizeof(struct nopfs_meta_entry) << 4 |   \
	 (uint32_t)sizeof(struct nopfs_meta_stat) >> 3)

uint32_t nopfs_meta_layout(void);
uint64_t nopfs_meta_checksum(const void *data, size_t length);

uint32_t nopfs_meta_layout(void)
{
	return LAYOUT;
}

uint64_t nopfs_meta_checksum(const void *data, size_t length)
{
	const uint8_t *bytes = data;
	uint64_t hash = UINT64_C(0xcbf29ce484222325);

	for (size_t i = 0; i < length; i++) {
		hash ^= bytes[i];
		hash *= UINT64_C(0x100000001b3);
	}
	return hash;
}

/* Whether @offset names a NUL-terminated string inside the names. */
static bool name_ok(const struct nopfs_meta_view *view, uint64_t offset)
{
	uint64_t length = view->header->names_length;

	return offset < length && memchr(view->names + offset, '\0', length - offset) != NULL;
}

static bool entries_ok(const struct nopfs_meta_view *view)
{
	const struct nopfs_meta_header *h = view->header;

	for (uint32_t e = 0; e < h->entry_count; e++) {
		const struct nopfs_meta_entry *entry = &view->entries[e];

		/* Names go into a dirent's d_name: NAME_MAX bytes at most. */
		if (!name_ok(view, entry->name) ||
		    strnlen(view->names + entry->name, NAME_MAX + 1) > NAME_MAX ||
		    (entry->target && !name_ok(view, entry->target)) ||
		    (entry->link && !name_ok(view, entry->link)) ||
		    (entry->dir != NOPFS_META_NONE && entry->dir >= h->dir_count))
			return false;
	}
	return true;
}

static bool dirs_ok(const struct nopfs_meta_view *view)
{
	const struct nopfs_meta_header *h = view->header;

	for (uint32_t d = 0; d < h->dir_count; d++) {
		const struct nopfs_meta_dir *dir = &view->dirs[d];

		if (dir->first > h->entry_count || dir->count > h->entry_count - dir->first ||
		    dir->self >= h->entry_count || !name_ok(view, dir->realpath))
			return false;
		for (uint32_t i = 0; i < dir->count; i++) {
			uint32_t s = view->sorted[dir->first + i];

			if (s < dir->first || s - dir->first >= dir->count)
				return false;
		}
	}
	return true;
}

nopfs_status nopfs_meta_view_init(struct nopfs_meta_view *view, const void *data, size_t length,
                                  const char **why)
{
	const struct nopfs_meta_header *h = data;
	const uint8_t *bytes = data;
	uint64_t need;

	*why = "is too short";
	if (length < sizeof(*h))
		return NOPFS_ERR_FORMAT;
	*why = "is not a metadata file of this version and architecture";
	if (memcmp(h->magic, NOPFS_META_MAGIC, 8) != 0 || h->version != NOPFS_META_VERSION ||
	    h->layout != LAYOUT)
		return NOPFS_ERR_FORMAT;
	*why = "has the wrong length";
	need = sizeof(*h) + (uint64_t)h->dir_count * sizeof(struct nopfs_meta_dir) +
	       (uint64_t)h->entry_count * (sizeof(struct nopfs_meta_entry) + sizeof(uint32_t));
	need = (need + 7) & ~(uint64_t)7;
	if (h->length != length || h->names_offset != need || h->names_length == 0 ||
	    h->names_length > length - need || need + h->names_length != length ||
	    h->dir_count == 0 || h->entry_count == 0)
		return NOPFS_ERR_FORMAT;
	*why = "fails its checksum";
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION /* tests/fuzz: reach what it guards */
	if (nopfs_meta_checksum(bytes + sizeof(*h), length - sizeof(*h)) != h->checksum)
		return NOPFS_ERR_FORMAT;
#endif
	view->header = h;
	view->changed = NULL;
	view->dirs = (const void *)(bytes + sizeof(*h));
	view->entries = (const void *)(view->dirs + h->dir_count);
	view->sorted = (const void *)(view->entries + h->entry_count);
	view->names = (const char *)bytes + h->names_offset;
	*why = "has an offset out of range";
	if (view->names[h->names_length - 1] != '\0' || !name_ok(view, h->root) ||
	    !entries_ok(view) || !dirs_ok(view) || view->dirs[0].self != 0 ||
	    view->entries[0].dir != 0) {
		memset(view, 0, sizeof(*view));
		return NOPFS_ERR_FORMAT;
	}
	return NOPFS_OK;
}

/* Byte order of names, shorter first on a common prefix (the sorted index's order). */
static int compare_name(const char *a, size_t a_length, const char *b)
{
	size_t b_length = strlen(b);
	int c = memcmp(a, b, a_length < b_length ? a_length : b_length);

	if (c)
		return c;
	return a_length < b_length ? -1 : a_length > b_length;
}

/* The entry named @name (@length bytes) in directory @d, or NONE. */
static uint32_t find(const struct nopfs_meta_view *view, uint32_t d, const char *name,
                     size_t length)
{
	const struct nopfs_meta_dir *dir = &view->dirs[d];
	uint32_t low = 0, high = dir->count;

	while (low < high) {
		uint32_t middle = low + (high - low) / 2;
		uint32_t e = view->sorted[dir->first + middle];
		int c = compare_name(name, length, nopfs_meta_name(view, view->entries[e].name));

		if (c == 0)
			return e;
		if (c < 0)
			high = middle;
		else
			low = middle + 1;
	}
	return NOPFS_META_NONE;
}

/* Whether directory @d changed since the scan (the agent sets its byte any time). */
static bool changed(const struct nopfs_meta_view *view, uint32_t d)
{
	return view->changed && __atomic_load_n(&view->changed[d], __ATOMIC_RELAXED);
}

enum nopfs_meta_found nopfs_meta_resolve(const struct nopfs_meta_view *view, const char *relative,
                                         bool follow, uint32_t *entry, uint32_t *parent,
                                         bool *followed, int *error)
{
	const char *p = relative;
	uint32_t dir = 0, current = 0, holder = NOPFS_META_NONE;
	bool through = follow || *relative != '\0';

	for (;;) {
		const struct nopfs_meta_entry *e;
		const char *end;
		size_t length;
		bool last, trailing;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		end = strchr(p, '/');
		length = end ? (size_t)(end - p) : strlen(p);
		if (length == 1 && p[0] == '.') {
			p += length;
			continue;
		}
		if (length == 2 && p[0] == '.' && p[1] == '.')
			return NOPFS_META_PASS;
		if (!view->dirs[dir].listed)
			return NOPFS_META_PASS;
		if (changed(view, dir))
			return NOPFS_META_STALE;
		current = find(view, dir, p, length);
		if (current == NOPFS_META_NONE) {
			*error = ENOENT;
			return NOPFS_META_ERROR;
		}
		holder = dir;
		p += length;
		trailing = *p == '/';
		while (*p == '/')
			p++;
		last = *p == '\0';
		e = &view->entries[current];
		through = !last || follow || trailing;
		if (!through)
			break;
		/* Through this entry: it must be a directory after following. */
		if (e->stat.error == NOPFS_META_UNKNOWN)
			return NOPFS_META_PASS;
		if (e->stat.error) {
			*error = e->stat.error;
			return NOPFS_META_ERROR;
		}
		if (!S_ISDIR(e->stat.mode)) {
			if (last && !trailing)
				break;
			*error = ENOTDIR;
			return NOPFS_META_ERROR;
		}
		if (e->dir == NOPFS_META_NONE) {
			if (last)
				break;
			return NOPFS_META_PASS;
		}
		dir = e->dir;
		if (last)
			break;
	}
	if (changed(view, dir) || (view->entries[current].dir != NOPFS_META_NONE &&
	                           changed(view, view->entries[current].dir)))
		return NOPFS_META_STALE;
	if (nopfs_meta_stat_of(view, current, through)->error == NOPFS_META_UNKNOWN)
		return NOPFS_META_PASS; /* not stat'd yet */
	*entry = current;
	*parent = holder;
	*followed = through;
	return NOPFS_META_ENTRY;
}

int nopfs_meta_stat_path(const struct nopfs_meta_view *view, const char *relative, bool follow,
                         struct stat *st)
{
	const struct nopfs_meta_stat *m;
	uint32_t entry, parent;
	bool followed;
	int error;

	switch (nopfs_meta_resolve(view, relative, follow, &entry, &parent, &followed, &error)) {
	case NOPFS_META_ENTRY:
		m = nopfs_meta_stat_of(view, entry, followed);
		if (m->error) {
			errno = m->error;
			return -1;
		}
		NOPFS_META_FILL_STAT(m, st);
		return 0;
	case NOPFS_META_ERROR:
		errno = error;
		return -1;
	default:
		return 1;
	}
}
