/*
 * A step description (NOPFS_SPANK_PLAN, then a PLAN notice from node 0):
 * agent_options_step() on one argument per line. Accepted or refused, it
 * must not misbehave; an accepted step is checked as on the command line.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "bootstrap.h"
#include "options.h"
#include "common/log.h"

/* The options are parsed without PMIx: the standalone form (--ranks). */
bool bootstrap_available(void)
{
	return false;
}

static void quiet(nopfs_log_level level, const char *message, void *arg)
{
	(void)level;
	(void)message;
	(void)arg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct agent_options base;
	static bool parsed;
	struct agent_options next;
	char *text;

	if (!parsed) {
		char *argv[] = { "nopfs-agent", "--dataset", "/data/a", "--seed",
			         "42",          "--epochs",  "3",       "--world-size",
			         "4",           "--ranks",   "0,1",     "--tier",
			         "ram:1G",      "--job-id",  "j7",      "--runtime-dir",
			         "/tmp/r7",     NULL };

		nopfs_log_set_sink(quiet, NULL, NOPFS_LOG_ERROR);
		if (agent_options_parse(17, argv, &base) != NOPFS_OK)
			abort();
		parsed = true;
	}
	if (size > 65536)
		return 0;
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (agent_options_step(&base, text, &next) == NOPFS_OK) {
		if (!next.dataset_root[0] || next.sampler.world_size == 0)
			abort();
		agent_options_fini(&next);
	}
	free(text);
	return 0;
}
