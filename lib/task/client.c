/*
 * The C API (nopfs.h): samples as read-only mappings of node-local copies.
 *
 * A sample comes from the first of these that works: the staging directory
 * ("i<rank>.<index>", the agent put it there ahead of time: no round trip), the
 * agent (GET, a descriptor passed back), the PFS (the path in the staging
 * index, read into anonymous memory). The agent is never trusted: a reply
 * that does not match the request, or a copy that is not a regular file of
 * the announced size, counts as a failure of the agent, never as a sample.
 * Nor is the staging directory: it is used only when it is this user's and
 * private, its files only when they are regular files of this user's of the
 * size the index gives (stage_dir.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "channel.h"
#include "catalog/catalog.h"
#include "client_ring.h"
#include "common/log.h"
#include "nopfs.h"
#include "runtime.h"
#include "stage_dir.h"
#include "stage_index.h"

struct nopfs_client {
	struct nopfs_channel channel;
	struct client_ring ring;
	struct nopfs_stage_index index; /* unmapped when absent or invalid */
	struct nopfs_stage_dir stage;   /* fd -1 when not set or not private */
	bool warned_staged;             /* about a staged copy not used */
	char dataset[PATH_MAX];         /* "" when not set */
};

/* Copy the environment variable @name into @out; "" when unset or too long. */
static void copy_env(const char *name, char *out, size_t length)
{
	const char *value = getenv(name);

	out[0] = '\0';
	if (!value || !*value)
		return;
	if (strlen(value) >= length) {
		nopfs_warning("$%s is too long, ignored", name);
		return;
	}
	memcpy(out, value, strlen(value) + 1);
}

/* Open the staging directory named by the environment, when it is private. */
static void open_stage_dir(struct nopfs_client *client)
{
	char path[PATH_MAX];
	nopfs_status status;
	const char *why;

	copy_env(NOPFS_ENV_STAGE_DIR, path, sizeof(path));
	status = nopfs_stage_dir_open(&client->stage, path, &why);
	if (status == NOPFS_ERR_PERMISSION || status == NOPFS_ERR_IO)
		nopfs_warning("staging directory %s %s: not used", path, why);
	else if (status != NOPFS_OK && path[0])
		nopfs_debug("staging directory %s: %s: not used", path, why);
}

/* Map the staging index when it is there and describes the agent's dataset. */
static void map_stage_index(struct nopfs_client *client)
{
	const char *path = client->stage.path;
	const char *why;
	nopfs_status status;

	if (client->stage.fd < 0)
		return;
	status = nopfs_stage_index_map(client->stage.fd, NOPFS_STAGE_INDEX_NAME, &client->index,
	                               &why);
	if (status == NOPFS_ERR_NOT_FOUND) {
		nopfs_debug("no staging index in %s: no PFS fallback", path);
		return;
	}
	if (status != NOPFS_OK) {
		nopfs_warning("%s/%s %s: ignored (no PFS fallback)", path, NOPFS_STAGE_INDEX_NAME,
		              why);
		return;
	}
	if (client->index.count != client->channel.samples) {
		nopfs_warning("%s/%s: %" PRIu64 " samples, the agent serves %" PRIu64
		              ": ignored (no PFS fallback)",
		              path, NOPFS_STAGE_INDEX_NAME, client->index.count,
		              client->channel.samples);
		nopfs_stage_index_unmap(&client->index);
	}
}

nopfs_status nopfs_client_connect(const char *socket_path, int rank, struct nopfs_client **out)
{
	struct nopfs_client *client;
	bool timeout_invalid;
	nopfs_status status;
	const char *why;
	int timeout_ms;

	if (!socket_path)
		socket_path = getenv(NOPFS_ENV_SOCKET);
	if (!socket_path || !*socket_path) {
		nopfs_error("no agent to connect to: $%s is not set", NOPFS_ENV_SOCKET);
		return NOPFS_ERR_NOT_FOUND;
	}
	if (rank < -1 || !out) {
		nopfs_error("nopfs_client_connect: invalid rank %d or output", rank);
		return NOPFS_ERR_INVALID;
	}
	if (rank == -1)
		rank = nopfs_env_rank();
	timeout_ms = nopfs_env_timeout_ms(&timeout_invalid);
	if (timeout_invalid)
		nopfs_warning("$%s='%s' is not a number of milliseconds in 1..3600000: using %d",
		              NOPFS_ENV_TIMEOUT_MS, getenv(NOPFS_ENV_TIMEOUT_MS), timeout_ms);
	client = calloc(1, sizeof(*client));
	if (!client) {
		nopfs_error("cannot allocate a client: %m");
		return NOPFS_ERR_NOMEM;
	}
	if (!nopfs_channel_init(&client->channel, socket_path, rank, NOPFS_WIRE_FLAG_API,
	                        timeout_ms)) {
		nopfs_error("agent socket path '%s' is too long for a Unix socket", socket_path);
		status = NOPFS_ERR_INVALID;
		goto out_free;
	}
	status = nopfs_channel_connect(&client->channel, &why);
	if (status != NOPFS_OK) {
		nopfs_error("cannot connect to the agent at %s: %s%s%s", socket_path, why,
		            status == NOPFS_ERR_IO && errno ? ": " : "",
		            status == NOPFS_ERR_IO && errno ? strerror(errno) : "");
		goto out_free;
	}
	open_stage_dir(client);
	copy_env(NOPFS_ENV_DATASET, client->dataset, sizeof(client->dataset));
	map_stage_index(client);
	client_ring_attach(&client->ring, &client->channel);
	*out = client;
	return NOPFS_OK;

out_free:
	free(client);
	return status;
}

void nopfs_client_disconnect(struct nopfs_client *client)
{
	if (!client)
		return;
	nopfs_channel_close(&client->channel);
	client_ring_detach(&client->ring);
	nopfs_stage_index_unmap(&client->index);
	nopfs_stage_dir_close(&client->stage);
	free(client);
}

uint64_t nopfs_client_sample_count(const struct nopfs_client *client)
{
	return client ? client->channel.samples : 0;
}

/*
 * Map @size bytes of @fd read-only into @sample (nothing for size 0). The
 * caller checked that @fd is a regular file of that size.
 */
static nopfs_status map_copy(int fd, uint64_t size, struct nopfs_sample *sample)
{
	void *mapping;

	if (size == 0)
		return NOPFS_OK;
	if (size > SIZE_MAX)
		return NOPFS_ERR_RANGE;
	mapping = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (mapping == MAP_FAILED)
		return nopfs_status_from_errno(errno);
	sample->data = mapping;
	sample->mapping = mapping;
	sample->mapping_length = (size_t)size;
	return NOPFS_OK;
}

/* The staged copy "i<rank>.<index>": NOPFS_ERR_NOT_FOUND when it is not there. */
static nopfs_status get_staged(struct nopfs_client *client, nopfs_sample_id index,
                               struct nopfs_sample *sample)
{
	struct nopfs_sample got = { .index = index, .source = NOPFS_FROM_STAGING };
	char name[32];
	uint64_t indexed_size;
	nopfs_status status;
	const char *why;
	int fd;

	/* Without the index there is no label: ask the agent instead. */
	/* Staged copies are named for their rank: without ours, ask the agent. */
	if (client->stage.fd < 0 || client->channel.rank < 0 ||
	    !nopfs_stage_index_entry(&client->index, index, &indexed_size, &got.label) ||
	    indexed_size > INT64_MAX)
		return NOPFS_ERR_NOT_FOUND;
	if (nopfs_stage_dir_reopen(&client->stage, &why) != NOPFS_OK) {
		nopfs_warning("staging directory %s %s: not used", client->stage.path, why);
		return NOPFS_ERR_NOT_FOUND;
	}
	nopfs_stage_name_for_index((uint32_t)client->channel.rank, index, name, sizeof(name));
	status = nopfs_stage_dir_openat(&client->stage, name, 0, (int64_t)indexed_size, &fd, &why);
	if (status != NOPFS_OK) {
		if (status != NOPFS_ERR_NOT_FOUND && !client->warned_staged)
			nopfs_warning("staged sample %s/%s %s: not used", client->stage.path, name,
			              why);
		client->warned_staged |= status != NOPFS_ERR_NOT_FOUND;
		return status;
	}
	got.size = indexed_size;
	status = map_copy(fd, got.size, &got);
	if (status != NOPFS_OK) {
		nopfs_warning("cannot map staged sample %s/%s: %s", client->stage.path, name,
		              nopfs_status_string(status));
		goto out_close;
	}
	*sample = got;
out_close:
	close(fd);
	return status;
}

/* Check a SAMPLE reply and its copy; NOPFS_ERR_FORMAT with @why if they are wrong. */
static nopfs_status check_copy(const struct nopfs_wire_message *reply, nopfs_sample_id index,
                               int fd, const char **why)
{
	struct stat st;

	if (reply->u.sample.index != index) {
		*why = "SAMPLE for another index";
		return NOPFS_ERR_FORMAT;
	}
	if (fd < 0) {
		*why = "SAMPLE without a file descriptor";
		return NOPFS_ERR_FORMAT;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		*why = "SAMPLE descriptor is not a regular file";
		return NOPFS_ERR_FORMAT;
	}
	if ((uint64_t)st.st_size != reply->u.sample.size) {
		*why = "SAMPLE size differs from its copy's";
		return NOPFS_ERR_FORMAT;
	}
	return NOPFS_OK;
}

/* Ask the agent (GET); on any failure the caller reads the PFS. */
static nopfs_status get_from_agent(struct nopfs_client *client, nopfs_sample_id index,
                                   struct nopfs_sample *sample)
{
	struct nopfs_wire_message request = { .type = NOPFS_WIRE_GET };
	struct nopfs_wire_message reply;
	struct nopfs_sample got = { .index = index };
	nopfs_status status;
	const char *why;
	int fd = -1;

	request.u.get.rank = client->channel.rank;
	request.u.get.index = index;
	status = nopfs_channel_call(&client->channel, &request, NOPFS_WIRE_SAMPLE, &reply, &fd,
	                            &why);
	if (status == NOPFS_ERR_UNSUPPORTED)
		return status; /* backing off: already said */
	if (status != NOPFS_OK) {
		nopfs_warning("agent at %s failed on sample %" PRIu32 ": %s; reading the PFS",
		              client->channel.socket_path, index, why);
		return status;
	}
	if (reply.type == NOPFS_WIRE_ERROR) {
		nopfs_debug("agent cannot serve sample %" PRIu32 ": %.*s (%s)", index,
		            (int)reply.u.error.length, reply.u.error.text,
		            nopfs_status_string(reply.u.error.status));
		return NOPFS_ERR_NOT_FOUND;
	}
	status = check_copy(&reply, index, fd, &why);
	if (status != NOPFS_OK) {
		nopfs_warning("agent at %s sent a bad reply for sample %" PRIu32
		              ": %s; reading the PFS",
		              client->channel.socket_path, index, why);
		nopfs_channel_fail(&client->channel);
		goto out_close;
	}
	got.size = reply.u.sample.size;
	got.label = reply.u.sample.label;
	got.source = reply.u.sample.source;
	status = map_copy(fd, got.size, &got);
	if (status != NOPFS_OK) {
		nopfs_warning("cannot map the agent's copy of sample %" PRIu32 ": %s", index,
		              nopfs_status_string(status));
		goto out_close;
	}
	*sample = got;
out_close:
	if (fd >= 0)
		close(fd);
	return status;
}

/* Read all of the regular file @fd (@size bytes) into a read-only anonymous mapping. */
static nopfs_status read_copy(int fd, uint64_t size, struct nopfs_sample *sample)
{
	uint8_t *mapping;
	size_t done = 0;

	if (size == 0)
		return NOPFS_OK;
	if (size > SIZE_MAX)
		return NOPFS_ERR_RANGE;
	mapping = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
	               0);
	if (mapping == MAP_FAILED)
		return NOPFS_ERR_NOMEM;
	while (done < size) {
		ssize_t got = read(fd, mapping + done, (size_t)size - done);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			int saved_errno = got < 0 ? errno : EIO; /* shrank while read */

			munmap(mapping, (size_t)size);
			return nopfs_status_from_errno(saved_errno);
		}
		done += (size_t)got;
	}
	mprotect(mapping, (size_t)size, PROT_READ);
	sample->data = mapping;
	sample->mapping = mapping;
	sample->mapping_length = (size_t)size;
	return NOPFS_OK;
}

/* Read sample @index from the PFS: $NOPFS_DATASET / its path in the staging index. */
static nopfs_status get_from_pfs(struct nopfs_client *client, nopfs_sample_id index,
                                 struct nopfs_sample *sample)
{
	struct nopfs_sample got = { .index = index, .source = NOPFS_FROM_PFS };
	char path[PATH_MAX];
	const char *relative;
	size_t length;
	uint64_t indexed_size;
	nopfs_status status;
	struct stat st;
	int fd;

	if (!client->dataset[0] ||
	    !nopfs_stage_index_entry(&client->index, index, &indexed_size, &got.label) ||
	    !nopfs_stage_index_path(&client->index, index, &relative, &length)) {
		nopfs_error("sample %" PRIu32 ": the agent cannot serve it and its PFS path is "
		            "unknown (no $%s or no staging index)",
		            index, NOPFS_ENV_DATASET);
		return NOPFS_ERR_UNSUPPORTED;
	}
	if (memchr(relative, '\0', length) || length > INT_MAX ||
	    snprintf(path, sizeof(path), "%s/%.*s", client->dataset, (int)length, relative) >=
	            (int)sizeof(path)) {
		nopfs_error("sample %" PRIu32 ": bad path in the staging index", index);
		return NOPFS_ERR_FORMAT;
	}
	/*
	 * The raw system call: an interposer loaded in this process would ask
	 * the agent again, and the agent has just failed for this sample.
	 */
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		nopfs_error("sample %" PRIu32 ": cannot open %s: %m", index, path);
		return nopfs_status_from_errno(errno);
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		nopfs_error("sample %" PRIu32 ": %s is not a regular file", index, path);
		status = NOPFS_ERR_IO;
		goto out_close;
	}
	got.size = (uint64_t)st.st_size;
	status = read_copy(fd, got.size, &got);
	if (status != NOPFS_OK) {
		nopfs_error("sample %" PRIu32 ": cannot read %s: %s", index, path,
		            nopfs_status_string(status));
		goto out_close;
	}
	*sample = got;
out_close:
	close(fd);
	return status;
}

nopfs_status nopfs_client_get(struct nopfs_client *client, uint64_t index,
                              struct nopfs_sample *sample)
{
	nopfs_sample_id id;

	if (!client || !sample)
		return NOPFS_ERR_INVALID;
	if (index >= client->channel.samples || index > NOPFS_SAMPLE_ID_MAX) {
		nopfs_error("sample %" PRIu64 " out of range: the dataset has %" PRIu64, index,
		            client->channel.samples);
		return NOPFS_ERR_RANGE;
	}
	id = (nopfs_sample_id)index;
	if (client_ring_take(&client->ring, id, sample))
		return NOPFS_OK;
	if (get_staged(client, id, sample) == NOPFS_OK)
		return NOPFS_OK;
	if (get_from_agent(client, id, sample) == NOPFS_OK)
		return NOPFS_OK;
	return get_from_pfs(client, id, sample);
}

void nopfs_client_release(struct nopfs_client *client, struct nopfs_sample *sample)
{
	if (!sample)
		return;
	if (sample->ring_slot && client)
		client_ring_release(&client->ring, &client->channel, sample);
	if (sample->mapping)
		munmap(sample->mapping, sample->mapping_length);
	memset(sample, 0, sizeof(*sample));
}

nopfs_status nopfs_client_stats(struct nopfs_client *client, char **json)
{
	struct nopfs_wire_message request = { .type = NOPFS_WIRE_STATS };
	struct nopfs_wire_message reply;
	nopfs_status status;
	const char *why;
	char *text;

	if (!client || !json)
		return NOPFS_ERR_INVALID;
	status = nopfs_channel_call(&client->channel, &request, NOPFS_WIRE_STATS_TEXT, &reply, NULL,
	                            &why);
	if (status != NOPFS_OK) {
		nopfs_error("cannot get statistics from the agent at %s: %s",
		            client->channel.socket_path, why);
		return status == NOPFS_ERR_UNSUPPORTED ? NOPFS_ERR_IO : status;
	}
	if (reply.type == NOPFS_WIRE_ERROR) {
		nopfs_error("the agent at %s refused statistics: %.*s", client->channel.socket_path,
		            (int)reply.u.error.length, reply.u.error.text);
		return reply.u.error.status >= NOPFS_ERR_INTERNAL
		               ? (nopfs_status)reply.u.error.status
		               : NOPFS_ERR_IO;
	}
	text = malloc((size_t)reply.u.stats_text.length + 1);
	if (!text) {
		nopfs_error("cannot allocate %" PRIu32 " bytes of statistics",
		            reply.u.stats_text.length);
		return NOPFS_ERR_NOMEM;
	}
	memcpy(text, reply.u.stats_text.text, reply.u.stats_text.length);
	text[reply.u.stats_text.length] = '\0';
	*json = text;
	return NOPFS_OK;
}
