/*
 * The discrete-event engine (see sim_engine.h): staging threads per worker,
 * tier prefetchers per node and tier, and the PFS shared by the nodes.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/access.h"
#include "common/log.h"
#include "sim_engine.h"

struct pool {
	unsigned int count;
	double free[SIM_THREADS_MAX];
};

struct worker {
	uint32_t node;
	const uint32_t *stream;
	uint64_t next;
	double compute; /* sum of s / c so far */
	struct pool threads;
	struct sim_ring ring;
	double last_end; /* t_{f-1} + s_{f-1} / c */
	double bucket[SIM_BUCKETS];
	double stall[SIM_BUCKETS];
	double *epoch_end;
};

struct filler {
	const struct sim_fill *fill;
	uint64_t next;
	uint32_t *woken; /* replicas whose primary copy now exists: a queue */
	uint64_t woken_head, woken_count;
	bool queued; /* has an event in the heap */
	struct pool threads;
};

/* A replica fill waiting for its primary copy; chained per sample. */
struct waiter {
	uint32_t filler;
	uint32_t next;
};

#define NO_WAITER UINT32_MAX

struct event {
	double time;
	uint32_t id; /* workers first, then fillers */
};

struct engine {
	const struct sim_dataset *data;
	struct sim_traits traits;
	struct nopfs_model model; /* the staging thread count is the policy's */
	struct sim_cache *cache;
	double compute;
	uint32_t nodes;
	struct worker *workers;
	struct filler *fillers;
	unsigned int filler_count;
	struct sim_pfs pfs;
	struct event *heap;
	unsigned int heap_count;
	uint32_t *wait_head; /* per sample: first waiter, when replicas wait */
	struct waiter *waiters;
	uint32_t waiter_count, waiter_room;
	uint8_t *accessed;       /* bitmap over samples */
	uint64_t *epoch_bytes;   /* per epoch: bytes computed by all workers */
	uint64_t *epoch_largest; /* per epoch: the largest sample computed */
	struct sim_result *result;
	nopfs_status status;
};

struct fetch {
	double begin;
	double seconds;
	int bucket;
};

/* ------------------------------------------------------------------------
 * Small containers.
 */

static unsigned int pool_first(const struct pool *pool)
{
	unsigned int best = 0;

	for (unsigned int i = 1; i < pool->count; i++)
		if (pool->free[i] < pool->free[best])
			best = i;
	return best;
}

static void pool_start(struct pool *pool, unsigned int count, double time)
{
	pool->count = count ? count : 1;
	for (unsigned int i = 0; i < pool->count; i++)
		pool->free[i] = time;
}

static double pool_latest(const struct pool *pool)
{
	double latest = 0;

	for (unsigned int i = 0; i < pool->count; i++)
		if (pool->free[i] > latest)
			latest = pool->free[i];
	return latest;
}

static bool event_before(const struct event *a, const struct event *b)
{
	return a->time < b->time || (a->time == b->time && a->id < b->id);
}

static void heap_push(struct engine *e, double time, uint32_t id)
{
	unsigned int at = e->heap_count++;

	e->heap[at] = (struct event){ .time = time, .id = id };
	while (at > 0 && event_before(&e->heap[at], &e->heap[(at - 1) / 2])) {
		struct event swap = e->heap[at];

		e->heap[at] = e->heap[(at - 1) / 2];
		e->heap[(at - 1) / 2] = swap;
		at = (at - 1) / 2;
	}
}

static struct event heap_pop(struct engine *e)
{
	struct event top = e->heap[0];
	unsigned int at = 0;

	e->heap[0] = e->heap[--e->heap_count];
	for (;;) {
		unsigned int left = 2 * at + 1, right = left + 1, least = at;

		if (left < e->heap_count && event_before(&e->heap[left], &e->heap[least]))
			least = left;
		if (right < e->heap_count && event_before(&e->heap[right], &e->heap[least]))
			least = right;
		if (least == at)
			break;
		struct event swap = e->heap[at];

		e->heap[at] = e->heap[least];
		e->heap[least] = swap;
		at = least;
	}
	return top;
}

/* ------------------------------------------------------------------------
 * Copies: a fetched copy becomes ready, and visible to peers if allowed.
 */

static bool filler_busy(const struct filler *fl)
{
	return fl->next < fl->fill->count || fl->woken_count > 0;
}

static double filler_next_time(const struct filler *fl)
{
	return fl->threads.free[pool_first(&fl->threads)];
}

/* Replicas waiting for @sample's first visible copy go back to their fillers. */
static void wake(struct engine *e, uint32_t sample, double now)
{
	uint32_t at = e->wait_head[sample];

	e->wait_head[sample] = NO_WAITER;
	for (; at != NO_WAITER; at = e->waiters[at].next) {
		struct filler *fl = &e->fillers[e->waiters[at].filler];
		double time;

		fl->woken[(fl->woken_head + fl->woken_count++) % fl->fill->count] = sample;
		if (fl->queued)
			continue;
		time = filler_next_time(fl);
		heap_push(e, time > now ? time : now, e->nodes + e->waiters[at].filler);
		fl->queued = true;
	}
}

static void cache_store(struct engine *e, uint32_t node, uint32_t sample, unsigned int tier,
                        double time, double now)
{
	struct sim_cache *cache = e->cache;
	struct sim_copy *copy = &cache->copy[sample];

	cache->ready[(uint64_t)node * cache->samples + sample] = time;
	if (!e->traits.replicas_visible && cache->holder && cache->holder[sample] != node)
		return;
	if (time < copy->time)
		*copy = (struct sim_copy){ .time = time, .node = node, .tier = (uint8_t)tier };
	if (e->wait_head && e->wait_head[sample] != NO_WAITER)
		wake(e, sample, now);
}

/* ------------------------------------------------------------------------
 * A staging thread fetches one sample from the fastest source.
 */

static void fetch_staging(struct engine *e, uint32_t node, uint32_t sample, uint64_t size,
                          double now, struct fetch *f)
{
	struct sim_cache *cache = e->cache;
	int local = -1, peer = -1, planned = -1, tier, waited_tier = -1;
	double local_wait = INFINITY, peer_wait = INFINITY, seconds, gamma, end, t;
	bool helpout = false;
	nopfs_source source;

	if (cache) {
		uint64_t at = (uint64_t)node * cache->samples + sample;

		planned = (int)cache->plan[at] - 1;
		if (planned >= 0) {
			if (cache->ready[at] <= now)
				local = planned;
			else if (cache->ready[at] < INFINITY)
				local_wait = cache->ready[at];
			else
				helpout = true;
		}
		if (e->traits.peers && (!helpout || e->traits.helpout_peer)) {
			const struct sim_copy *copy = &cache->copy[sample];

			if (copy->node != node && copy->time <= now) {
				peer = copy->tier;
			} else if (copy->node != node && copy->time < INFINITY &&
			           e->traits.peer_wait) {
				peer_wait = copy->time;
				waited_tier = copy->tier;
			}
		}
	}
	gamma = sim_pfs_gamma(&e->pfs, node, now);
	source = nopfs_model_best_source(&e->model, size, local, peer, gamma, &seconds);
	tier = source == NOPFS_SOURCE_LOCAL ? local : peer;
	f->begin = now;
	end = now + seconds;
	if (source == NOPFS_SOURCE_PFS && e->pfs.busy[node] > now)
		end = e->pfs.busy[node] + seconds; /* behind the node's queued reads */
	/* A copy in flight: waiting for it may beat every source available now. */
	if (local_wait < INFINITY) {
		t = local_wait + nopfs_model_fetch_local(&e->model, size, (unsigned int)planned);
		if (t < end) {
			source = NOPFS_SOURCE_LOCAL;
			tier = planned;
			f->begin = local_wait;
			end = t;
		}
	}
	if (peer_wait < INFINITY) {
		t = peer_wait + nopfs_model_fetch_peer(&e->model, size, (unsigned int)waited_tier);
		if (t < end) {
			source = NOPFS_SOURCE_PEER;
			tier = waited_tier;
			f->begin = peer_wait;
			end = t;
		}
	}
	seconds = end - f->begin;
	switch (source) {
	case NOPFS_SOURCE_LOCAL:
		f->bucket = SIM_BUCKET_TIER + tier;
		break;
	case NOPFS_SOURCE_PEER:
		f->bucket = SIM_BUCKET_PEER;
		e->result->peer_bytes += size;
		break;
	default:
		f->bucket = SIM_BUCKET_PFS;
		seconds = sim_pfs_read(&e->pfs, node, now, size, gamma, &f->begin);
		break;
	}
	if (helpout) {
		/* Help-out: planned here but not fetched yet; keep the copy too. */
		seconds += nopfs_model_store(&e->model, size, (unsigned int)planned);
		cache_store(e, node, sample, (unsigned int)planned, f->begin + seconds, now);
	}
	f->seconds = seconds;
}

static void worker_step(struct engine *e, struct worker *w, double now)
{
	const struct sim_dataset *data = e->data;
	uint32_t sample = w->stream[w->next];
	uint64_t size = data->sizes[sample], epoch = w->next / data->per_rank;
	double compute = (double)size / e->compute, done, consume;
	struct fetch f = { .bucket = SIM_BUCKET_IDEAL };

	if (e->traits.perfect) {
		done = now;
	} else {
		fetch_staging(e, w->node, sample, size, now, &f);
		done = f.begin + f.seconds + nopfs_model_write(&e->model, size);
		w->threads.free[pool_first(&w->threads)] = done;
	}
	w->compute += compute;
	e->epoch_bytes[epoch] += size;
	if (size > e->epoch_largest[epoch])
		e->epoch_largest[epoch] = size;
	consume = done > w->last_end ? done : w->last_end;
	w->bucket[f.bucket] += consume + compute - w->last_end;
	w->stall[f.bucket] += consume - w->last_end;
	w->last_end = consume + compute;
	if (!e->traits.perfect && !sim_ring_push(&w->ring, size, w->last_end))
		e->status = NOPFS_ERR_NOMEM;
	e->accessed[sample / 8] |= (uint8_t)(1u << (sample % 8));
	e->result->reads[f.bucket]++;
	e->result->read_bytes[f.bucket] += size;
	w->next++;
	if (w->next % data->per_rank == 0)
		w->epoch_end[w->next / data->per_rank - 1] = w->last_end;
}

/* When the worker's next sample can start: a free thread and room for it. */
static double worker_next_time(struct engine *e, struct worker *w)
{
	uint64_t size = e->data->sizes[w->stream[w->next]];
	double thread = w->threads.free[pool_first(&w->threads)], room;

	if (e->traits.perfect)
		return thread;
	room = sim_ring_make_room(&w->ring, size, e->traits.staging_capacity);
	return room > thread ? room : thread;
}

/* ------------------------------------------------------------------------
 * A tier prefetcher fetches the next sample of its list.
 */

/* Park a replica fill until its primary copy exists (see wake()). */
static bool wait_for_copy(struct engine *e, struct filler *fl, uint32_t sample)
{
	if (!fl->woken) {
		fl->woken = malloc(fl->fill->count * sizeof(*fl->woken));
		if (!fl->woken)
			goto out_nomem;
	}
	if (e->waiter_count == e->waiter_room) {
		uint32_t room = e->waiter_room ? e->waiter_room * 2 : 4096;
		struct waiter *grown = realloc(e->waiters, room * sizeof(*grown));

		if (!grown)
			goto out_nomem;
		e->waiters = grown;
		e->waiter_room = room;
	}
	e->waiters[e->waiter_count] = (struct waiter){ .filler = (uint32_t)(fl - e->fillers),
		                                       .next = e->wait_head[sample] };
	e->wait_head[sample] = e->waiter_count++;
	return true;

out_nomem:
	e->status = NOPFS_ERR_NOMEM;
	return false;
}

static void filler_step(struct engine *e, struct filler *fl, double now)
{
	const struct sim_fill *fill = fl->fill;
	struct sim_cache *cache = e->cache;
	uint32_t node = fill->node;

	for (;;) {
		const struct sim_copy *copy;
		double begin = now, seconds;
		uint32_t sample;
		uint64_t size;

		if (fl->woken_count) {
			sample = fl->woken[fl->woken_head];
			fl->woken_head = (fl->woken_head + 1) % fill->count;
			fl->woken_count--;
		} else if (fl->next < fill->count) {
			sample = fill->list[fl->next++];
		} else {
			return;
		}
		if (cache->ready[(uint64_t)node * cache->samples + sample] < INFINITY)
			continue; /* a staging thread helped out */
		size = e->data->sizes[sample];
		copy = &cache->copy[sample];
		if (e->traits.fill_peer && copy->node != node && copy->time < INFINITY) {
			begin = copy->time > now ? copy->time : now;
			seconds = nopfs_model_fetch_peer(&e->model, size, copy->tier);
			e->result->peer_bytes += size;
		} else if (e->traits.fill_peer && cache->holder && cache->holder[sample] != node &&
		           cache->holder[sample] != NOPFS_NO_NODE) {
			/* A replica whose primary has nothing yet: wait for it. */
			if (!wait_for_copy(e, fl, sample))
				return;
			continue;
		} else {
			seconds = sim_pfs_read(&e->pfs, node, now, size,
			                       sim_pfs_gamma(&e->pfs, node, now), &begin);
			e->result->fill_pfs_bytes += size;
		}
		seconds += nopfs_model_store(&e->model, size, fill->tier);
		fl->threads.free[pool_first(&fl->threads)] = begin + seconds;
		cache_store(e, node, sample, fill->tier, begin + seconds, now);
		return;
	}
}

/* ------------------------------------------------------------------------
 * Phases: stage-in fills, then training with the background fills.
 */

/* An entity's next event is never before its last (idle threads start now). */
static double later(double a, double b)
{
	return a > b ? a : b;
}

static void run_phase(struct engine *e, bool stage_in)
{
	e->heap_count = 0;
	if (!stage_in)
		for (uint32_t i = 0; i < e->nodes; i++)
			if (e->workers[i].next < e->data->length)
				heap_push(e, worker_next_time(e, &e->workers[i]), i);
	for (unsigned int i = 0; i < e->filler_count; i++) {
		struct filler *fl = &e->fillers[i];

		fl->queued = fl->fill->stage_in == stage_in && filler_busy(fl);
		if (fl->queued)
			heap_push(e, filler_next_time(fl), e->nodes + i);
	}
	while (e->heap_count && e->status == NOPFS_OK) {
		struct event ev = heap_pop(e);

		e->result->events++;
		if (ev.id < e->nodes) {
			struct worker *w = &e->workers[ev.id];

			worker_step(e, w, ev.time);
			if (w->next < e->data->length)
				heap_push(e, later(worker_next_time(e, w), ev.time), ev.id);
		} else {
			struct filler *fl = &e->fillers[ev.id - e->nodes];

			fl->queued = false;
			filler_step(e, fl, ev.time);
			fl->queued = filler_busy(fl);
			if (fl->queued)
				heap_push(e, later(filler_next_time(fl), ev.time), ev.id);
		}
	}
}

static double stage_in_end(const struct engine *e)
{
	double end = 0;

	for (unsigned int i = 0; i < e->filler_count; i++)
		if (e->fillers[i].fill->stage_in && pool_latest(&e->fillers[i].threads) > end)
			end = pool_latest(&e->fillers[i].threads);
	return end;
}

/* The least time any assignment of @bytes, none larger than @largest, takes. */
static double balanced(const struct engine *e, uint64_t bytes, uint64_t largest)
{
	double even = (double)bytes / e->nodes, most = (double)largest;

	return (even > most ? even : most) / e->compute;
}

/*
 * Perfect: no stalls, and the work spread as evenly as any assignment of
 * samples to workers could spread it (a policy may deal samples to any
 * worker, and the workers do not wait for each other): its total, and the
 * end of each epoch, is balanced() of what was computed up to then. The
 * sampler's own shards may take longer.
 */
static void collect_perfect(struct engine *e, double start)
{
	struct sim_result *r = e->result;
	uint64_t bytes = 0, largest = 0;

	for (uint32_t ep = 0; ep < r->epochs; ep++) {
		bytes += e->epoch_bytes[ep];
		if (e->epoch_largest[ep] > largest)
			largest = e->epoch_largest[ep];
		r->epoch_end[ep] = start + balanced(e, bytes, largest);
	}
	r->total = start + r->balanced;
	r->compute = r->balanced;
	r->stall = 0;
	memset(r->bucket, 0, sizeof(r->bucket));
	memset(r->stall_bucket, 0, sizeof(r->stall_bucket));
	r->bucket[SIM_BUCKET_STAGE_IN] = start;
	r->bucket[SIM_BUCKET_IDEAL] = r->balanced;
}

static void collect(struct engine *e, double start)
{
	struct sim_result *r = e->result;
	const struct worker *slowest = &e->workers[0];
	uint64_t samples = e->data->workload.samples, largest;

	for (uint32_t i = 1; i < e->nodes; i++)
		if (e->workers[i].last_end > slowest->last_end)
			slowest = &e->workers[i];
	r->total = slowest->last_end;
	r->stage_in = start;
	memcpy(r->bucket, slowest->bucket, sizeof(r->bucket));
	memcpy(r->stall_bucket, slowest->stall, sizeof(r->stall_bucket));
	r->bucket[SIM_BUCKET_STAGE_IN] += start;
	r->stall = 0;
	r->compute = 0;
	for (uint32_t i = 0; i < e->nodes; i++)
		if (e->workers[i].compute > r->compute)
			r->compute = e->workers[i].compute;
	for (int b = 0; b < SIM_BUCKETS; b++)
		r->stall += slowest->stall[b];
	for (uint32_t ep = 0; ep < r->epochs; ep++) {
		r->epoch_end[ep] = 0;
		for (uint32_t i = 0; i < e->nodes; i++)
			if (e->workers[i].epoch_end[ep] > r->epoch_end[ep])
				r->epoch_end[ep] = e->workers[i].epoch_end[ep];
	}
	r->consumed = (uint64_t)e->nodes * e->data->length;
	r->computed_bytes = 0;
	largest = 0;
	for (uint32_t ep = 0; ep < r->epochs; ep++) {
		r->computed_bytes += e->epoch_bytes[ep];
		if (e->epoch_largest[ep] > largest)
			largest = e->epoch_largest[ep];
	}
	r->balanced = balanced(e, r->computed_bytes, largest);
	if (e->traits.perfect)
		collect_perfect(e, start);
	r->pfs_bytes = e->pfs.bytes;
	for (uint64_t k = 0; k < samples; k++) {
		if (e->accessed[k / 8] & (1u << (k % 8))) {
			r->accessed_samples++;
			r->accessed_bytes += e->data->sizes[k];
		}
	}
}

static void engine_fini(struct engine *e)
{
	if (e->workers) {
		for (uint32_t i = 0; i < e->nodes; i++) {
			sim_ring_fini(&e->workers[i].ring);
			free(e->workers[i].epoch_end);
		}
	}
	if (e->fillers)
		for (unsigned int i = 0; i < e->filler_count; i++)
			free(e->fillers[i].woken);
	free(e->workers);
	free(e->fillers);
	sim_pfs_fini(&e->pfs);
	free(e->heap);
	free(e->accessed);
	free(e->epoch_bytes);
	free(e->epoch_largest);
	free(e->wait_head);
	free(e->waiters);
}

/* Threads of one node that may read the PFS: staging and every tier. */
static unsigned int engine_threads(const struct nopfs_model *model, const struct sim_setup *setup)
{
	unsigned int threads = setup->traits.staging_threads ? setup->traits.staging_threads : 1;

	for (unsigned int t = 0; t < model->tiers; t++)
		threads += model->tier[t].threads;
	return threads;
}

static nopfs_status engine_init(struct engine *e, const struct sim_dataset *data,
                                const struct nopfs_model *model, const struct sim_setup *setup,
                                struct sim_result *result)
{
	uint32_t nodes = data->workload.nodes;
	uint32_t *const *streams = setup->streams ? setup->streams : data->streams;

	*e = (struct engine){ .data = data,
		              .traits = setup->traits,
		              .model = *model,
		              .cache = setup->cache,
		              .compute = model->compute,
		              .nodes = nodes,
		              .filler_count = setup->fill_count,
		              .result = result };
	e->model.staging.threads = setup->traits.staging_threads;
	e->workers = calloc(nodes, sizeof(*e->workers));
	e->fillers = calloc(setup->fill_count ? setup->fill_count : 1, sizeof(*e->fillers));
	e->heap = malloc((nodes + setup->fill_count) * sizeof(*e->heap));
	e->accessed = calloc(data->workload.samples / 8 + 1, 1);
	result->epochs = data->workload.epochs;
	result->epoch_end = calloc(result->epochs, sizeof(*result->epoch_end));
	e->epoch_bytes = calloc(result->epochs ? result->epochs : 1, sizeof(*e->epoch_bytes));
	e->epoch_largest = calloc(result->epochs ? result->epochs : 1, sizeof(*e->epoch_largest));
	if (!e->workers || !e->fillers || !e->heap || !e->accessed || !result->epoch_end ||
	    !e->epoch_bytes || !e->epoch_largest)
		goto out_nomem;
	if (sim_pfs_init(&e->pfs, &e->model, nodes, engine_threads(model, setup)) != NOPFS_OK)
		return NOPFS_ERR_NOMEM; /* logged */
	if (setup->traits.fill_peer && setup->cache && setup->cache->holder) {
		e->wait_head = malloc(data->workload.samples * sizeof(*e->wait_head));
		if (!e->wait_head)
			goto out_nomem;
		for (uint64_t k = 0; k < data->workload.samples; k++)
			e->wait_head[k] = NO_WAITER;
	}
	for (uint32_t i = 0; i < nodes; i++) {
		e->workers[i].node = i;
		e->workers[i].stream = streams[i];
		e->workers[i].epoch_end = calloc(result->epochs, sizeof(double));
		if (!e->workers[i].epoch_end)
			goto out_nomem;
	}
	for (unsigned int i = 0; i < setup->fill_count; i++) {
		e->fillers[i].fill = &setup->fills[i];
		pool_start(&e->fillers[i].threads, model->tier[setup->fills[i].tier].threads, 0);
	}
	return NOPFS_OK;

out_nomem:
	nopfs_error("no memory to simulate %" PRIu32 " workers", nodes);
	return NOPFS_ERR_NOMEM;
}

nopfs_status sim_engine_run(const struct sim_dataset *data, const struct nopfs_model *model,
                            const struct sim_setup *setup, struct sim_result *result)
{
	struct engine e;
	nopfs_status status;
	double start;

	status = engine_init(&e, data, model, setup, result);
	if (status != NOPFS_OK)
		goto out;
	run_phase(&e, true);
	start = stage_in_end(&e);
	for (uint32_t i = 0; i < e.nodes; i++) {
		pool_start(&e.workers[i].threads, setup->traits.staging_threads, start);
		e.workers[i].last_end = start;
	}
	for (unsigned int i = 0; i < e.filler_count; i++)
		if (!e.fillers[i].fill->stage_in)
			pool_start(&e.fillers[i].threads, e.fillers[i].threads.count, start);
	run_phase(&e, false);
	status = e.pfs.failed ? NOPFS_ERR_NOMEM : e.status;
	if (status != NOPFS_OK) {
		nopfs_error("no memory while simulating %" PRIu64 " samples",
		            data->workload.samples);
		goto out;
	}
	collect(&e, start);
out:
	engine_fini(&e);
	return status;
}
