/*
 * The regression half of a fuzz target: every file of its corpus
 * (FUZZ_CORPUS, compiled in) through the target, built like the rest of the
 * tests. A crash, a sanitizer report or a hang fails the test; an empty or
 * missing corpus does too (the test would check nothing).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

static int replay_file(int dir, const char *name)
{
	struct stat st;
	uint8_t *data;
	size_t done = 0;
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "replay: %s/%s: not a readable regular file\n", FUZZ_CORPUS, name);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	data = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!data) {
		close(fd);
		return -1;
	}
	while (done < (size_t)st.st_size) {
		ssize_t got = read(fd, data + done, (size_t)st.st_size - done);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		done += (size_t)got;
	}
	close(fd);
	if (done != (size_t)st.st_size) {
		fprintf(stderr, "replay: %s/%s: short read\n", FUZZ_CORPUS, name);
		free(data);
		return -1;
	}
	LLVMFuzzerTestOneInput(data, done);
	free(data);
	return 0;
}

int main(void)
{
	DIR *dir = opendir(FUZZ_CORPUS);
	struct dirent *entry;
	unsigned int count = 0, failed = 0;

	if (!dir) {
		fprintf(stderr, "replay: corpus %s: %s\n", FUZZ_CORPUS, strerror(errno));
		return 1;
	}
	while ((entry = readdir(dir))) {
		if (entry->d_name[0] == '.')
			continue;
		if (replay_file(dirfd(dir), entry->d_name) != 0)
			failed++;
		else
			count++;
	}
	closedir(dir);
	printf("replay: %u inputs of %s replayed, %u unreadable\n", count, FUZZ_CORPUS, failed);
	return count == 0 || failed ? 1 : 0;
}
