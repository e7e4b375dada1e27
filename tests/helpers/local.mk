# tests/helpers: fixtures and small programs the tests share: a fake agent,
# a catalog dump for the torchvision cross-check, the interposer's probe.

check_PROGRAMS += \
	tests/helpers/catalog_dump \
	tests/helpers/fake_agent \
	tests/helpers/meta_build \
	tests/helpers/meta_probe \
	tests/helpers/preload_probe
tests_helpers_catalog_dump_SOURCES = tests/helpers/catalog_dump.c
tests_helpers_catalog_dump_LDADD = lib/libnopfs_core.la
tests_helpers_fake_agent_SOURCES = \
	tests/helpers/fake_agent_main.c \
	tests/helpers/fake_agent.c \
	tests/helpers/fake_agent.h
tests_helpers_fake_agent_LDADD = lib/libnopfs_core.la
tests_helpers_preload_probe_SOURCES = tests/helpers/preload_probe.c
tests_helpers_meta_build_SOURCES = tests/helpers/meta_build.c
tests_helpers_meta_build_LDADD = lib/libnopfs_core.la
tests_helpers_meta_probe_SOURCES = tests/helpers/meta_probe.c
EXTRA_DIST += \
	tests/helpers/catalog_fixture.h \
	tests/helpers/log_capture.h \
	tests/helpers/peer_fixture.h \
	tests/helpers/probe_fixture.h \
	tests/helpers/wire_fixture.h
