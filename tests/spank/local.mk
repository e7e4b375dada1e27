# tests/spank: the plugin's plugstack keys and agent step description, and
# the limits of the kept caches.

check_PROGRAMS += tests/spank/check_spank_config
tests_spank_check_spank_config_SOURCES = \
	tests/spank/check_spank_config.c \
	spank/config.c \
	spank/companion.c
tests_spank_check_spank_config_CPPFLAGS = $(UNIT_TEST_CPPFLAGS) -I$(top_srcdir)/spank
tests_spank_check_spank_config_CFLAGS = $(UNIT_TEST_FLAGS)
tests_spank_check_spank_config_LDADD = $(UNIT_TEST_LIBS)
TESTS += tests/spank/check_spank_config

check_PROGRAMS += tests/spank/check_cache_limits
tests_spank_check_cache_limits_SOURCES = \
	tests/spank/check_cache_limits.c \
	spank/cache_limits.c \
	spank/remove_tree.c
tests_spank_check_cache_limits_CPPFLAGS = $(UNIT_TEST_CPPFLAGS) -I$(top_srcdir)/spank
tests_spank_check_cache_limits_CFLAGS = $(UNIT_TEST_FLAGS)
tests_spank_check_cache_limits_LDADD = $(UNIT_TEST_LIBS)
TESTS += tests/spank/check_cache_limits
