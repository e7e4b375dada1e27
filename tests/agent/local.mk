# tests/agent: unit tests of the agent's parts (options, job report, probe,
# data plane) and its system tests (tests/agent/system: the daemon
# standalone under unmodified scripts, no Slurm).

check_PROGRAMS += \
	tests/agent/check_options \
	tests/agent/stage/check_stream_sync \
	tests/agent/tier/check_limits \
	tests/agent/check_job_report \
	tests/agent/probe/check_probe \
	tests/agent/peer/check_peer

tests_agent_check_options_SOURCES = \
	tests/agent/check_options.c \
	agent/options.c
tests_agent_check_options_CPPFLAGS = $(UNIT_TEST_CPPFLAGS) -I$(top_srcdir)/agent
tests_agent_check_options_CFLAGS = $(UNIT_TEST_FLAGS)
tests_agent_check_options_LDADD = lib/libnopfs_core.la $(UNIT_TEST_LIBS)

tests_agent_stage_check_stream_sync_SOURCES = \
	tests/agent/stage/check_stream_sync.c \
	agent/stage/stream_sync.c
tests_agent_stage_check_stream_sync_CPPFLAGS = $(UNIT_TEST_CPPFLAGS) -I$(top_srcdir)/agent
tests_agent_stage_check_stream_sync_CFLAGS = $(UNIT_TEST_FLAGS)
tests_agent_stage_check_stream_sync_LDADD = lib/libnopfs_core.la $(UNIT_TEST_LIBS)

tests_agent_tier_check_limits_SOURCES = \
	tests/agent/tier/check_limits.c \
	agent/tier/limits.c
tests_agent_tier_check_limits_CPPFLAGS = $(UNIT_TEST_CPPFLAGS) -I$(top_srcdir)/agent
tests_agent_tier_check_limits_CFLAGS = $(UNIT_TEST_FLAGS)
tests_agent_tier_check_limits_LDADD = $(UNIT_TEST_LIBS)

tests_agent_check_job_report_SOURCES = \
	tests/agent/check_job_report.c \
	agent/job_report.c
tests_agent_check_job_report_CPPFLAGS = $(UNIT_TEST_CPPFLAGS) -I$(top_srcdir)/agent
tests_agent_check_job_report_CFLAGS = $(UNIT_TEST_FLAGS) $(JANSSON_CFLAGS)
tests_agent_check_job_report_LDADD = lib/report/libnopfs_report.la $(UNIT_TEST_LIBS) $(JANSSON_LIBS)

tests_agent_probe_check_probe_SOURCES = tests/agent/probe/check_probe.c
tests_agent_probe_check_probe_CPPFLAGS = $(UNIT_TEST_CPPFLAGS) -I$(top_srcdir)/agent
tests_agent_probe_check_probe_CFLAGS = $(UNIT_TEST_FLAGS) $(JANSSON_CFLAGS)
tests_agent_probe_check_probe_LDADD = agent/libnopfs_agent.la lib/report/libnopfs_report.la $(UNIT_TEST_LIBS) $(JANSSON_LIBS)

tests_agent_peer_check_peer_SOURCES = \
	tests/agent/peer/check_peer.c \
	tests/agent/peer/check_peer_failures.c \
	tests/agent/peer/check_peer_stream.c
tests_agent_peer_check_peer_CPPFLAGS = $(UNIT_TEST_CPPFLAGS) -I$(top_srcdir)/agent
tests_agent_peer_check_peer_CFLAGS = $(UNIT_TEST_FLAGS) $(UCX_CFLAGS) $(CRYPTO_CFLAGS)
tests_agent_peer_check_peer_LDADD = agent/libnopfs_agent.la $(UNIT_TEST_LIBS) $(UCX_LIBS)

TESTS += \
	tests/agent/check_options \
	tests/agent/stage/check_stream_sync \
	tests/agent/tier/check_limits \
	tests/agent/check_job_report \
	tests/agent/probe/check_probe \
	tests/agent/peer/check_peer

AGENT_SYSTEM_TESTS = \
	tests/agent/system/test_pipeline.py \
	tests/agent/system/test_api.py \
	tests/agent/system/test_agent_killed.py \
	tests/agent/system/test_replan.py \
	tests/agent/system/test_wrong_seed.py \
	tests/agent/system/test_security.py \
	tests/agent/system/test_malformed.py \
	tests/agent/system/test_shm_full.py \
	tests/agent/system/test_stop_phases.py \
	tests/agent/system/test_wait.py \
	tests/agent/system/test_resume.py \
	tests/agent/system/test_stage_ahead.py \
	tests/agent/system/test_verify.py \
	tests/agent/system/test_keep.py \
	tests/agent/system/test_val.py \
	tests/agent/system/test_ssd_full.py \
	tests/agent/system/test_tmp_full.py \
	tests/agent/system/test_memory_limit.py \
	tests/agent/system/test_dataset_gone.py \
	tests/agent/system/test_live.py \
	tests/agent/system/test_metadata.py \
	tests/agent/system/test_odd_dataset.py \
	tests/agent/system/test_large_samples.py
TESTS += $(AGENT_SYSTEM_TESTS)
if HAVE_MPI
TESTS += tests/agent/system/test_mpi.py
endif
EXTRA_DIST += \
	$(AGENT_SYSTEM_TESTS) \
	tests/agent/system/test_mpi.py \
	tests/agent/system/harness.py \
	tests/agent/system/train_script.py
