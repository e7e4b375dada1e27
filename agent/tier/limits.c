/*
 * The job's memory limit from its cgroups, and the free room of a file
 * system: what ram:N% tiers are shares of, and what they must fit in.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "limits.h"

/* The number in @path ("max" and anything else unreadable: none), or UINT64_MAX. */
static uint64_t read_limit(const char *path)
{
	char text[64], *end;
	unsigned long long value;
	FILE *file = fopen(path, "re");
	size_t length;

	if (!file)
		return UINT64_MAX;
	length = fread(text, 1, sizeof(text) - 1, file);
	fclose(file);
	text[length] = '\0';
	errno = 0;
	value = strtoull(text, &end, 10);
	if (errno || end == text || (*end != '\n' && *end != '\0'))
		return UINT64_MAX;
	return (uint64_t)value;
}

/*
 * The smallest limit in @file along @group (a cgroup path "/a/b") and its
 * ancestors under @base; *@where set to the file it came from.
 */
static uint64_t smallest_along(const char *base, const char *group, const char *file, uint64_t best,
                               char *where, size_t where_size)
{
	char path[PATH_MAX], prefix[PATH_MAX];
	size_t length = strlen(group);

	if (length >= sizeof(prefix) || group[0] != '/')
		return best;
	memcpy(prefix, group, length + 1);
	for (;;) {
		uint64_t limit;
		char *slash;

		/* "/" is the root: its files are the machine's, not a limit */
		if ((size_t)snprintf(path, sizeof(path), "%s%s/%s", base, prefix, file) <
		            sizeof(path) &&
		    strcmp(prefix, "/") != 0 && strcmp(prefix, "") != 0) {
			limit = read_limit(path);
			if (limit < best) {
				best = limit;
				if (where)
					snprintf(where, where_size, "%s", path);
			}
		}
		slash = strrchr(prefix, '/');

		if (!slash || slash == prefix)
			break;
		*slash = '\0';
	}
	return best;
}

uint64_t tier_memory_limit(const char *proc_cgroup, const char *root, uint64_t physical, char *why,
                           size_t why_size)
{
	char line[PATH_MAX + 64], base[PATH_MAX];
	uint64_t best = physical;
	FILE *file = fopen(proc_cgroup, "re");

	if (why)
		snprintf(why, why_size, "physical memory");
	if (!file)
		return best;
	while (fgets(line, sizeof(line), file)) {
		char *controllers = strchr(line, ':'), *group;

		if (!controllers)
			continue;
		group = strchr(controllers + 1, ':');
		if (!group)
			continue;
		*group++ = '\0';
		group[strcspn(group, "\n")] = '\0';
		controllers++;
		if (strncmp(line, "0:", 2) == 0 && controllers[0] == '\0') {
			/* v2: hierarchy 0, no controller list */
			best = smallest_along(root, group, "memory.max", best, why, why_size);
		} else if (strstr(controllers, "memory") &&
		           (size_t)snprintf(base, sizeof(base), "%s/memory", root) < sizeof(base)) {
			/* v1: the memory controller's hierarchy */
			best = smallest_along(base, group, "memory.limit_in_bytes", best, why,
			                      why_size);
		}
	}
	fclose(file);
	return best;
}

uint64_t tier_free_bytes(const char *directory)
{
	struct statvfs fs;

	if (statvfs(directory, &fs) != 0)
		return UINT64_MAX;
	return (uint64_t)fs.f_bavail * fs.f_frsize;
}
