/*
 * The agent's probe: curves, time budget, scratch files, PFS bytes
 * (checked against inotify, not against the probe's own accounting), the
 * cache, errors, the model and the JSON report.
 */
#include "config.h"

#include <sys/inotify.h>
#include <sys/stat.h>

#include "probe_fixture.h"
#include "common/clock.h"

/* Dataset bytes read according to inotify; fails if a file was read twice. */
static uint64_t bytes_closed(int watch)
{
	char buffer[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
	unsigned int opened[FILE_COUNT] = { 0 }, closed[FILE_COUNT] = { 0 };
	uint64_t bytes = 0;
	ssize_t n;

	while ((n = read(watch, buffer, sizeof(buffer))) > 0) {
		for (char *p = buffer; p < buffer + n;) {
			struct inotify_event *event = (void *)p;
			int index;

			p += sizeof(*event) + event->len;
			ck_assert_msg(event->len && sscanf(event->name, "f%d", &index) == 1,
			              "unexpected event");
			if (event->mask & IN_OPEN)
				opened[index]++;
			if (event->mask & IN_CLOSE_NOWRITE)
				closed[index]++;
		}
	}
	ck_assert_msg(n < 0 && errno == EAGAIN, "inotify read: %s", strerror(errno));
	for (int i = 0; i < FILE_COUNT; i++) {
		ck_assert_msg(opened[i] == closed[i] && closed[i] <= 1, "file %d: %u opens", i,
		              opened[i]);
		bytes += closed[i] * files[i].size;
	}
	return bytes;
}

static void print_figures(const char *what, const struct probe_result *r)
{
	printf("%s (%.2f s, host %s):\n  ram copy", what, r->seconds, r->host);
	for (unsigned int i = 0; i < r->ram_copy.points; i++)
		printf(" %g:%.0f MB/s", r->ram_copy.x[i], r->ram_copy.y[i] / 1e6);
	for (unsigned int k = 0; k < r->ssd_count; k++) {
		printf("\n  ssd %s (%s, %llu KiB ops) write", r->ssd[k].path,
		       r->ssd[k].direct ? "direct" : "buffered",
		       (unsigned long long)r->io_size / 1024);
		for (unsigned int i = 0; i < r->ssd[k].write.points; i++)
			printf(" %g:%.0f MB/s", r->ssd[k].write.x[i], r->ssd[k].write.y[i] / 1e6);
		printf(" read");
		for (unsigned int i = 0; i < r->ssd[k].read.points; i++)
			printf(" %g:%.0f MB/s", r->ssd[k].read.x[i], r->ssd[k].read.y[i] / 1e6);
	}
	printf("\n  pfs read");
	for (unsigned int i = 0; i < r->pfs_read.points; i++)
		printf(" %g:%.0f MB/s", r->pfs_read.x[i], r->pfs_read.y[i] / 1e6);
	printf(" (%llu bytes)\n", (unsigned long long)r->pfs_bytes_read);
}

START_TEST(measures_within_budget)
{
	/*
	 * A sanity bound on the budget logic, not a speed target: the slack is
	 * for what no time box can stop (an I/O in flight stalled by a busy
	 * disk's journal, a starved CPU on a shared machine, valgrind).
	 */
	double slack = RUNNING_ON_VALGRIND ? 10 : 0.5, budget = 1, start, elapsed;
	struct nopfs_tier_list tiers;
	struct probe_config config;
	struct probe_result r;
	int watch;

	ram_and_ssd(&tiers, at("ssd"));
	config = config_for(&tiers, budget);
	watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	ck_assert_int_ge(watch, 0);
	ck_assert_int_ge(inotify_add_watch(watch, data_dir, IN_OPEN | IN_CLOSE_NOWRITE), 0);
	capture_start(); /* the phases' timings, should the budget be exceeded */
	start = nopfs_clock_seconds();
	ck_assert_int_eq(probe_run(&config, &r), NOPFS_OK);
	elapsed = nopfs_clock_seconds() - start;
	capture_stop();
	print_figures("measured", &r);

	ck_assert_msg(elapsed <= budget + slack, "took %.3f s for a %.1f s budget:\n%s", elapsed,
	              budget, captured);
	ck_assert(r.seconds > 0 && r.seconds <= elapsed);
	ck_assert(!r.from_cache);
	ck_assert(r.host[0] != '\0');
	ck_assert_uint_eq(r.io_size, MEAN_SIZE);
	assert_curve(&r.ram_copy, "ram");
	assert_threads(r.ram_threads, "ram");
	ck_assert_uint_eq(r.ssd_count, 1);
	ck_assert_str_eq(r.ssd[0].path, at("ssd"));
	ck_assert(r.ssd[0].scratch_bytes >= MEAN_SIZE);
	assert_curve(&r.ssd[0].write, "ssd write");
	assert_curve(&r.ssd[0].read, "ssd read");
	assert_threads(r.ssd[0].threads, "ssd");
	assert_curve(&r.pfs_read, "pfs");
	assert_threads(r.pfs_threads, "pfs");
	ck_assert_uint_eq(entries(at("ssd")), 0); /* the scratch file is gone */
	ck_assert_uint_gt(r.pfs_bytes_read, 0);
	ck_assert_uint_eq(r.pfs_bytes_read, bytes_closed(watch));
	close(watch);
}
END_TEST

/*
 * pfs_bytes_max bounds what the PFS test reads: each thread count its share,
 * overshot by at most one file per thread (a file is read a chunk at a time,
 * and these are smaller than a chunk). Unbounded, the slices hold 12 MB.
 */
START_TEST(pfs_bytes_are_bounded)
{
	struct nopfs_tier_list tiers;
	struct probe_config config;
	struct probe_result r;
	uint64_t largest = files[FILE_COUNT - 1].size, most;
	int watch;

	ram_and_ssd(&tiers, at("ssd"));
	config = config_for(&tiers, 1);
	config.pfs_bytes_max = 300 * 1024;
	most = config.pfs_bytes_max + POINTS + (1 + 2 + 4) * largest;
	watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	ck_assert_int_ge(watch, 0);
	ck_assert_int_ge(inotify_add_watch(watch, data_dir, IN_OPEN | IN_CLOSE_NOWRITE), 0);
	ck_assert_int_eq(probe_run(&config, &r), NOPFS_OK);
	print_figures("bounded", &r);
	ck_assert_uint_eq(r.pfs_read.points, POINTS); /* every thread count measured */
	ck_assert_uint_gt(r.pfs_bytes_read, 0);
	ck_assert_uint_le(r.pfs_bytes_read, most);
	ck_assert_uint_eq(r.pfs_bytes_read, bytes_closed(watch));
	close(watch);
}
END_TEST

START_TEST(no_files_no_pfs_curve)
{
	struct nopfs_tier_list tiers;
	struct probe_config config;
	struct probe_result r;

	tiers_for(&tiers, "ram:1G");
	config = config_for(&tiers, 0.2);
	config.files = NULL;
	config.file_count = 0;
	ck_assert_int_eq(probe_run(&config, &r), NOPFS_OK);
	assert_curve(&r.ram_copy, "ram");
	ck_assert_uint_eq(r.ssd_count, 0);
	ck_assert_uint_eq(r.pfs_read.points, 0);
	ck_assert_uint_eq(r.pfs_threads, 0);
	ck_assert_uint_eq(r.pfs_bytes_read, 0);
}
END_TEST

/* The one cache file in @dir. */
static const char *cache_file(const char *dir)
{
	static char path[PATH_MAX];
	DIR *d = opendir(dir);
	struct dirent *e;

	ck_assert_ptr_nonnull(d);
	path[0] = '\0';
	while ((e = readdir(d)))
		if (strncmp(e->d_name, "probe-", 6) == 0)
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
	closedir(d);
	ck_assert_msg(path[0], "no cache file in %s", dir);
	return path;
}

START_TEST(cache_is_reused_by_key_and_age)
{
	struct nopfs_tier_list tiers, other;
	struct probe_result first, again, r;
	struct probe_config config;
	struct stat st;

	ram_and_ssd(&tiers, at("ssd"));
	config = config_for(&tiers, 0.25);
	config.cache_dir = at("cache/nested");
	ck_assert_int_eq(probe_run(&config, &first), NOPFS_OK);
	ck_assert(!first.from_cache);
	ck_assert_int_eq(stat(at("cache/nested"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0700);
	ck_assert_uint_eq(entries(at("cache/nested")), 1);

	capture_start();
	ck_assert_int_eq(probe_run(&config, &again), NOPFS_OK);
	ck_assert(again.from_cache);
	ck_assert(again.seconds == 0 && again.pfs_bytes_read == 0);
	ck_assert(same_curve(&again.ram_copy, &first.ram_copy));
	ck_assert(same_curve(&again.ssd[0].read, &first.ssd[0].read));
	ck_assert(same_curve(&again.ssd[0].write, &first.ssd[0].write));
	ck_assert(same_curve(&again.pfs_read, &first.pfs_read));
	ck_assert_uint_eq(again.ram_threads, first.ram_threads);
	ck_assert_uint_eq(again.ssd[0].threads, first.ssd[0].threads);
	ck_assert_uint_eq(again.pfs_threads, first.pfs_threads);
	ck_assert_int_eq(again.ssd[0].direct, first.ssd[0].direct);
	ck_assert_uint_eq(again.ssd[0].scratch_bytes, first.ssd[0].scratch_bytes);
	ck_assert_uint_eq(again.io_size, first.io_size);
	ck_assert_str_eq(again.host, first.host);
	ck_assert(!logged("measuring again") && !logged("warning:"));

	/* Another ssd directory is another key, hence another file. */
	ram_and_ssd(&other, at("ssd2"));
	config.tiers = &other;
	ck_assert_int_eq(probe_run(&config, &r), NOPFS_OK);
	ck_assert(!r.from_cache);
	ck_assert_uint_eq(entries(at("cache/nested")), 2);

	/* Expired: measured again, quietly. */
	config.tiers = &tiers;
	config.max_age_seconds = 0;
	capture_start();
	ck_assert_int_eq(probe_run(&config, &r), NOPFS_OK);
	ck_assert(!r.from_cache);
	ck_assert(logged_at("info", "measuring again") && !logged("warning:"));
	capture_stop();
}
END_TEST

START_TEST(bad_cache_is_measured_again)
{
	struct nopfs_tier_list tiers;
	struct probe_config config;
	struct probe_result r;
	char path[PATH_MAX];
	json_error_t error;
	json_t *root;

	ram_and_ssd(&tiers, at("ssd"));
	config = config_for(&tiers, 0.2);
	config.cache_dir = at("cache-bad");
	ck_assert_int_eq(probe_run(&config, &r), NOPFS_OK);
	snprintf(path, sizeof(path), "%s", cache_file(at("cache-bad")));

	/* Not JSON at all. */
	write_text(path, "{\"version\": 1, \"timestamp\": ");
	capture_start();
	ck_assert_int_eq(probe_run(&config, &r), NOPFS_OK);
	ck_assert(!r.from_cache);
	ck_assert(logged_at("warning", path) && logged_at("warning", "corrupt"));
	ck_assert(logged_at("warning", "measuring again"));

	/* Rewritten by that run: valid again. */
	ck_assert_int_eq(probe_run(&config, &r), NOPFS_OK);
	ck_assert(r.from_cache);

	/* Valid JSON made for another key. */
	root = json_load_file(path, 0, &error);
	ck_assert_ptr_nonnull(root);
	json_object_set_new(json_object_get(root, "key"), "host", json_string("elsewhere"));
	ck_assert_int_eq(json_dump_file(root, path, 0), 0);
	json_decref(root);
	capture_start();
	ck_assert_int_eq(probe_run(&config, &r), NOPFS_OK);
	ck_assert(!r.from_cache);
	ck_assert(logged_at("warning", path) && logged_at("warning", "another host"));

	/* The right key but a curve out of order. */
	root = json_load_file(path, 0, &error);
	ck_assert_ptr_nonnull(root);
	json_object_set_new(
	        json_array_get(
	                json_object_get(json_object_get(json_object_get(root, "result"), "ram"),
	                                "copy"),
	                0),
	        "threads", json_integer(3));
	ck_assert_int_eq(json_dump_file(root, path, 0), 0);
	json_decref(root);
	capture_start();
	ck_assert_int_eq(probe_run(&config, &r), NOPFS_OK);
	ck_assert(!r.from_cache);
	ck_assert(logged_at("warning", path) && logged_at("warning", "out of order"));
	capture_stop();
}
END_TEST

START_TEST(unwritable_cache_only_warns)
{
	struct nopfs_tier_list tiers;
	struct probe_config config;
	struct probe_result r;

	tiers_for(&tiers, "ram:1G");
	write_text(at("not-a-dir"), "x");
	config = config_for(&tiers, 0.2);
	config.file_count = 0;
	config.files = NULL;
	config.cache_dir = at("not-a-dir/cache");
	capture_start();
	ck_assert_int_eq(probe_run(&config, &r), NOPFS_OK);
	ck_assert(!r.from_cache);
	ck_assert(logged_at("warning", "not caching"));
	ck_assert(logged_at("warning", at("not-a-dir/cache")));
	ck_assert(!logged("error:"));
	capture_stop();
}
END_TEST

/* probe_run fails naming @culprit and leaves *result alone and no scratch file. */
static void assert_fails(const struct probe_config *config, nopfs_status expected,
                         const char *culprit)
{
	struct probe_result r, untouched;

	memset(&r, 0xab, sizeof(r));
	untouched = r;
	capture_start();
	ck_assert_int_eq(probe_run(config, &r), expected);
	ck_assert_msg(logged_at("error", culprit), "no error names %s: %s", culprit, captured);
	ck_assert(memcmp(&r, &untouched, sizeof(r)) == 0);
	ck_assert_uint_eq(entries(at("ssd")), 0);
	capture_stop();
}

/* A dataset file the probe cannot read is skipped and named; none readable fails. */
START_TEST(unreadable_pfs_files_are_skipped)
{
	struct probe_result r;
	struct probe_file bad[2] = { { .size = 4096 }, { .size = 4096 } };
	struct nopfs_tier_list tiers;
	struct probe_config config;

	ram_and_ssd(&tiers, at("ssd"));
	/*
	 * Time for the PFS phase to try a file: under valgrind on a loaded machine
	 * the SSD and RAM phases of 0.2 s overran into it, and a phase whose time
	 * is up tries nothing (no file tried is no file found unreadable).
	 */
	config = config_for(&tiers, RUNNING_ON_VALGRIND ? 2 : 0.2);
	make_dir(at("data-dir"));
	bad[0].path = at("data-dir");
	bad[1].path = files[0].path;
	config.files = bad;
	config.file_count = 1;
	assert_fails(&config, NOPFS_ERR_IO, bad[0].path);
	ck_assert(logged_at("error", "Is a directory"));

	bad[0].path = at("no-such-file");
	config.file_count = 2; /* every file is read: 1 thread, then 2 */
	capture_start();
	ck_assert_int_eq(probe_run(&config, &r), NOPFS_OK);
	ck_assert_msg(logged_at("warning", bad[0].path), "no warning names %s: %s", bad[0].path,
	              captured);
	ck_assert(logged_at("warning", "No such file or directory"));
	ck_assert_uint_gt(r.pfs_bytes_read, 0);
	capture_stop();

	/* a FIFO named like a sample: skipped at once, not waited on for a writer */
	ck_assert_int_eq(mkfifo(at("fifo"), 0600), 0);
	bad[0].path = at("fifo");
	capture_start();
	ck_assert_int_eq(probe_run(&config, &r), NOPFS_OK);
	ck_assert_msg(logged_at("warning", "not a regular file"), "%s", captured);
	capture_stop();
}
END_TEST

START_TEST(missing_ssd_dir_is_an_error)
{
	struct nopfs_tier_list tiers;
	struct probe_config config;
	char spec[PATH_MAX + 32];
	double start = nopfs_clock_seconds();

	snprintf(spec, sizeof(spec), "ram:1G,ssd:%s:1G", at("no-such-dir"));
	tiers_for(&tiers, spec);
	make_dir(at("ssd"));
	config = config_for(&tiers, 1);
	assert_fails(&config, NOPFS_ERR_NOT_FOUND, at("no-such-dir"));
	ck_assert_msg(nopfs_clock_seconds() - start < 0.2,
	              "measured before checking the directories");
}
END_TEST

START_TEST(bad_config_is_rejected)
{
	struct nopfs_tier_list tiers;
	struct probe_config config;

	tiers_for(&tiers, "ram:1G");
	make_dir(at("ssd"));
	config = config_for(&tiers, 0);
	assert_fails(&config, NOPFS_ERR_INVALID, "budget_seconds");
	config = config_for(&tiers, 1);
	config.max_threads = 0;
	assert_fails(&config, NOPFS_ERR_INVALID, "max_threads");
	config = config_for(&tiers, 1);
	config.mean_sample_size = 0;
	assert_fails(&config, NOPFS_ERR_INVALID, "mean_sample_size");
}
END_TEST

/* ramfs refuses O_DIRECT: the SSD test must fall back to buffered I/O. */
START_TEST(buffered_where_direct_is_refused)
{
	const char *dir = at("ramfs");
	struct nopfs_tier_list tiers;
	struct probe_config config;
	struct probe_result r;

	if (!mount_private(dir, "ramfs", "mode=0700"))
		return;
	config = ssd_only(&tiers, dir);
	ck_assert_int_eq(probe_run(&config, &r), NOPFS_OK);
	ck_assert(!r.ssd[0].direct);
	assert_curve(&r.ssd[0].write, "ramfs write");
	assert_curve(&r.ssd[0].read, "ramfs read");
	ck_assert_uint_eq(entries(dir), 0);
	ck_assert_int_eq(umount2(dir, MNT_DETACH), 0);
}
END_TEST

/* A 2 MiB file system: a tenth of it holds 3 operations of 64 KiB. */
START_TEST(small_disk_measures_less_and_says_so)
{
	const char *dir = at("small");
	struct nopfs_tier_list tiers;
	struct probe_config config;
	struct probe_result r;

	if (!mount_private(dir, "tmpfs", "size=2m,mode=0700"))
		return;
	config = ssd_only(&tiers, dir);
	capture_start();
	ck_assert_int_eq(probe_run(&config, &r), NOPFS_OK);
	ck_assert_uint_eq(r.ssd[0].scratch_bytes, 3 * MEAN_SIZE);
	ck_assert(logged_at("warning", dir) && logged_at("warning", "scratch file instead"));
	assert_curve(&r.ssd[0].read, "small read");
	ck_assert_uint_eq(entries(dir), 0);
	capture_stop();
	ck_assert_int_eq(umount2(dir, MNT_DETACH), 0);

	/* 256 KiB: not even one operation fits in a tenth. */
	if (!mount_private(dir, "tmpfs", "size=256k,mode=0700"))
		return;
	capture_start();
	ck_assert_int_eq(probe_run(&config, &r), NOPFS_ERR_RANGE);
	ck_assert(logged_at("error", dir) && logged_at("error", "too little"));
	capture_stop();
	ck_assert_int_eq(umount2(dir, MNT_DETACH), 0);
}
END_TEST

static void curve_of(struct nopfs_curve *curve, double x0, double y0, double x1, double y1)
{
	memset(curve, 0, sizeof(*curve));
	ck_assert_int_eq(nopfs_curve_set(curve, x0, y0), NOPFS_OK);
	ck_assert_int_eq(nopfs_curve_set(curve, x1, y1), NOPFS_OK);
}

static struct probe_result synthetic(void)
{
	struct probe_result r;

	memset(&r, 0, sizeof(r));
	curve_of(&r.ram_copy, 1, 10e9, 2, 18e9);
	r.ram_threads = 2;
	r.ssd_count = 2;
	strcpy(r.ssd[0].path, "/a");
	curve_of(&r.ssd[0].read, 1, 1e9, 4, 3e9);
	curve_of(&r.ssd[0].write, 1, 0.5e9, 4, 1e9);
	r.ssd[0].threads = 4;
	r.ssd[0].direct = true;
	r.ssd[0].scratch_bytes = 1 << 20;
	strcpy(r.ssd[1].path, "/b");
	curve_of(&r.ssd[1].read, 1, 2e8, 2, 3e8);
	curve_of(&r.ssd[1].write, 1, 1e8, 2, 1.5e8);
	r.ssd[1].threads = 2;
	r.ssd[1].scratch_bytes = 2 << 20;
	curve_of(&r.pfs_read, 1, 1e8, 4, 3e8);
	r.pfs_threads = 4;
	r.pfs_bytes_read = 12345;
	r.io_size = 65536;
	r.seconds = 0.5;
	strcpy(r.host, "node7");
	return r;
}

START_TEST(fill_model_puts_curves_in_their_tiers)
{
	struct probe_result r = synthetic();
	struct nopfs_tier_list tiers;
	struct nopfs_model model;

	memset(&model, 0, sizeof(model));
	model.tier[0].capacity = 7;
	model.tier[2].capacity = 9;
	tiers_for(&tiers, "ram:1G,ssd:/a:1G,ssd:/b:1G");
	probe_fill_model(&r, &tiers, &model);
	ck_assert_uint_eq(model.tiers, 3);
	ck_assert(same_curve(&model.tier[0].read, &r.ram_copy));
	ck_assert(same_curve(&model.tier[0].write, &r.ram_copy));
	ck_assert_uint_eq(model.tier[0].threads, 2);
	ck_assert(same_curve(&model.tier[1].read, &r.ssd[0].read));
	ck_assert(same_curve(&model.tier[1].write, &r.ssd[0].write));
	ck_assert_uint_eq(model.tier[1].threads, 4);
	ck_assert(same_curve(&model.tier[2].read, &r.ssd[1].read));
	ck_assert_uint_eq(model.tier[2].threads, 2);
	ck_assert_uint_eq(model.tier[0].capacity, 7);
	ck_assert_uint_eq(model.tier[2].capacity, 9);
	ck_assert(same_curve(&model.staging.write, &r.ram_copy));
	ck_assert(same_curve(&model.pfs, &r.pfs_read));
	ck_assert(model.pfs_client_limit == 3e8);

	/* SSD first: the first ssd result goes to tier 0, RAM to tier 1. */
	memset(&model, 0, sizeof(model));
	tiers_for(&tiers, "ssd:/a:1G,ram:1G");
	probe_fill_model(&r, &tiers, &model);
	ck_assert_uint_eq(model.tiers, 2);
	ck_assert(same_curve(&model.tier[0].read, &r.ssd[0].read));
	ck_assert_uint_eq(model.tier[0].threads, 4);
	ck_assert(same_curve(&model.tier[1].read, &r.ram_copy));
	ck_assert_uint_eq(model.tier[1].threads, 2);

	/* No PFS measurement: the model's PFS terms stay. */
	r.pfs_read.points = 0;
	r.pfs_threads = 0;
	curve_of(&model.pfs, 1, 5, 2, 6);
	model.pfs_client_limit = 42;
	probe_fill_model(&r, &tiers, &model);
	ck_assert(model.pfs.points == 2 && model.pfs_client_limit == 42);
}
END_TEST

static void assert_json_curve(json_t *array, const struct nopfs_curve *curve)
{
	ck_assert(json_is_array(array));
	ck_assert_uint_eq(json_array_size(array), curve->points);
	for (unsigned int i = 0; i < curve->points; i++) {
		json_t *point = json_array_get(array, i);

		ck_assert_int_eq(json_integer_value(json_object_get(point, "threads")),
		                 (json_int_t)curve->x[i]);
		ck_assert(json_real_value(json_object_get(point, "bytes_per_second")) ==
		          curve->y[i]);
	}
}

START_TEST(json_has_the_documented_keys)
{
	struct probe_result r = synthetic();
	json_t *json = probe_to_json(&r), *ssd, *ram, *pfs;

	ck_assert_ptr_nonnull(json);
	ck_assert_str_eq(json_string_value(json_object_get(json, "host")), "node7");
	ck_assert(json_is_false(json_object_get(json, "from_cache")));
	ck_assert(json_real_value(json_object_get(json, "seconds")) == 0.5);
	ck_assert_int_eq(json_integer_value(json_object_get(json, "pfs_bytes_read")), 12345);
	ck_assert_int_eq(json_integer_value(json_object_get(json, "io_size")), 65536);
	ram = json_object_get(json, "ram");
	ck_assert_int_eq(json_integer_value(json_object_get(ram, "threads")), 2);
	assert_json_curve(json_object_get(ram, "copy"), &r.ram_copy);
	ssd = json_object_get(json, "ssd");
	ck_assert_uint_eq(json_array_size(ssd), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ssd, 0), "path")), "/a");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ssd, 0), "io_mode")),
	                 "direct");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ssd, 1), "io_mode")),
	                 "buffered");
	ck_assert_int_eq(
	        json_integer_value(json_object_get(json_array_get(ssd, 1), "scratch_bytes")),
	        2 << 20);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(ssd, 0), "threads")), 4);
	assert_json_curve(json_object_get(json_array_get(ssd, 0), "read"), &r.ssd[0].read);
	assert_json_curve(json_object_get(json_array_get(ssd, 1), "write"), &r.ssd[1].write);
	pfs = json_object_get(json, "pfs");
	ck_assert_int_eq(json_integer_value(json_object_get(pfs, "threads")), 4);
	assert_json_curve(json_object_get(pfs, "read"), &r.pfs_read);
	json_decref(json);
}
END_TEST

int main(void)
{
	Suite *suite = suite_create("probe");
	TCase *tc = tcase_create("probe");
	SRunner *runner;
	int failed;

	snprintf(base, sizeof(base), "%s/check_probe.XXXXXX",
	         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	capture_stop();
	if (!make_dataset()) {
		perror("creating the test dataset");
		nftw(base, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
		return 1;
	}
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, measures_within_budget);
	tcase_add_test(tc, pfs_bytes_are_bounded);
	tcase_add_test(tc, no_files_no_pfs_curve);
	tcase_add_test(tc, cache_is_reused_by_key_and_age);
	tcase_add_test(tc, bad_cache_is_measured_again);
	tcase_add_test(tc, unwritable_cache_only_warns);
	tcase_add_test(tc, unreadable_pfs_files_are_skipped);
	tcase_add_test(tc, missing_ssd_dir_is_an_error);
	tcase_add_test(tc, bad_config_is_rejected);
	tcase_add_test(tc, buffered_where_direct_is_refused);
	tcase_add_test(tc, small_disk_measures_less_and_says_so);
	tcase_add_test(tc, fill_model_puts_curves_in_their_tiers);
	tcase_add_test(tc, json_has_the_documented_keys);
	suite_add_tcase(suite, tc);
	runner = srunner_create(suite);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	nftw(base, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
