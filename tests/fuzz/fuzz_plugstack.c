/*
 * The admin's plugstack.conf arguments: config_parse() on the words of the
 * input (split at newlines and NULs, at most 64). Every value is either
 * taken or refused with an error naming its key; the strings it keeps are
 * terminated.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "companion.h"
#include "plugin.h"

/* What companion.c needs of the rest of the plugin and of libslurm. */
struct spank_config nopfs_config;
struct spank_request nopfs_request;

void slurm_error(const char *format, ...)
{
	(void)format;
}

#define WORDS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct spank_config config;
	char *copy, *argv[WORDS];
	int argc = 0;
	size_t start = 0;

	if (size > 16384)
		return 0;
	copy = malloc(size + 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	for (size_t i = 0; i <= size && argc < WORDS; i++) {
		if (copy[i] == '\n' || copy[i] == '\0') {
			copy[i] = '\0';
			argv[argc++] = copy + start;
			start = i + 1;
		}
	}
	config_parse(&config, argc, argv);
	if (memchr(config.error, '\0', sizeof(config.error)) == NULL ||
	    memchr(config.tiers, '\0', sizeof(config.tiers)) == NULL ||
	    memchr(config.ssd_base, '\0', sizeof(config.ssd_base)) == NULL ||
	    memchr(config.report_dir, '\0', sizeof(config.report_dir)) == NULL ||
	    memchr(config.cache_base, '\0', sizeof(config.cache_base)) == NULL)
		abort();
	free(copy);
	return 0;
}
