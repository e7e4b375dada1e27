# tests/fuzz: fuzz targets for what nopfs reads from others: the task wire
# protocol, data-plane messages and records, the catalog node 0 sends, the
# catalog cache file, the dataset's metadata (node 0's scan, read by the
# other agents and the tasks), step descriptions, plugstack.conf arguments.
#
# `make check` replays each target's corpus (tests/fuzz/corpus/TARGET: seeds
# and every input that ever crashed it) through the target built like the
# other tests. `make fuzz` builds each target with clang's libFuzzer, ASan
# and UBSan and runs it FUZZ_SECONDS; a crash stops it with the input saved
# as tests/fuzz/crash-TARGET-*: add that file to the corpus, then fix.
#
# Both builds define FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION: checksums of
# serialized catalogs are not compared, so what they guard is reached.

FUZZ_TARGETS = wire catalog catalog_cache meta peer step plugstack
FUZZ_DEFINES = -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION

check_LTLIBRARIES = tests/fuzz/libfuzz_core.la
tests_fuzz_libfuzz_core_la_SOURCES = $(lib_libnopfs_core_la_SOURCES)
tests_fuzz_libfuzz_core_la_CPPFLAGS = $(AM_CPPFLAGS) $(FUZZ_DEFINES)
tests_fuzz_libfuzz_core_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_fuzz_libfuzz_core_la_LIBADD = $(JANSSON_LIBS) -lm

FUZZ_REPLAY_CPPFLAGS = $(AM_CPPFLAGS) $(FUZZ_DEFINES) -I$(top_srcdir)/tests/fuzz
FUZZ_REPLAY_LIBS = tests/fuzz/libfuzz_core.la

check_PROGRAMS += \
	tests/fuzz/replay_wire \
	tests/fuzz/replay_catalog \
	tests/fuzz/replay_catalog_cache \
	tests/fuzz/replay_meta \
	tests/fuzz/replay_peer \
	tests/fuzz/replay_step \
	tests/fuzz/replay_plugstack

tests_fuzz_replay_wire_SOURCES = \
	tests/fuzz/replay.c \
	tests/fuzz/fuzz.h \
	tests/fuzz/fuzz_wire.c
tests_fuzz_replay_wire_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS) \
	-DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/wire"'
tests_fuzz_replay_wire_LDADD = $(FUZZ_REPLAY_LIBS)

tests_fuzz_replay_catalog_SOURCES = \
	tests/fuzz/replay.c \
	tests/fuzz/fuzz.h \
	tests/fuzz/fuzz_catalog.c
tests_fuzz_replay_catalog_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS) \
	-DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/catalog"'
tests_fuzz_replay_catalog_LDADD = $(FUZZ_REPLAY_LIBS)

tests_fuzz_replay_catalog_cache_SOURCES = \
	tests/fuzz/replay.c \
	tests/fuzz/fuzz.h \
	tests/fuzz/fuzz_catalog_cache.c
tests_fuzz_replay_catalog_cache_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS) \
	-DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/catalog_cache"'
tests_fuzz_replay_catalog_cache_LDADD = $(FUZZ_REPLAY_LIBS)

tests_fuzz_replay_meta_SOURCES = \
	tests/fuzz/replay.c \
	tests/fuzz/fuzz.h \
	tests/fuzz/fuzz_meta.c
tests_fuzz_replay_meta_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS) \
	-DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/meta"'
tests_fuzz_replay_meta_LDADD = $(FUZZ_REPLAY_LIBS)

fuzz_extra_peer = \
	agent/peer/peer_auth.c \
	agent/peer/peer_record.c
tests_fuzz_replay_peer_SOURCES = \
	tests/fuzz/replay.c \
	tests/fuzz/fuzz.h \
	tests/fuzz/fuzz_peer.c \
	$(fuzz_extra_peer)
tests_fuzz_replay_peer_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS) -I$(top_srcdir)/agent \
	-DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/peer"'
tests_fuzz_replay_peer_CFLAGS = $(AM_CFLAGS) $(UCX_CFLAGS) $(CRYPTO_CFLAGS)
tests_fuzz_replay_peer_LDADD = $(FUZZ_REPLAY_LIBS) $(CRYPTO_LIBS)

fuzz_extra_step = \
	agent/options.c
tests_fuzz_replay_step_SOURCES = \
	tests/fuzz/replay.c \
	tests/fuzz/fuzz.h \
	tests/fuzz/fuzz_step.c \
	$(fuzz_extra_step)
tests_fuzz_replay_step_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS) -I$(top_srcdir)/agent \
	-DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/step"'
tests_fuzz_replay_step_LDADD = $(FUZZ_REPLAY_LIBS)

fuzz_extra_plugstack = \
	spank/config.c \
	spank/companion.c
tests_fuzz_replay_plugstack_SOURCES = \
	tests/fuzz/replay.c \
	tests/fuzz/fuzz.h \
	tests/fuzz/fuzz_plugstack.c \
	$(fuzz_extra_plugstack)
tests_fuzz_replay_plugstack_CPPFLAGS = $(FUZZ_REPLAY_CPPFLAGS) -I$(top_srcdir)/spank \
	-DFUZZ_CORPUS='"$(abs_top_srcdir)/tests/fuzz/corpus/plugstack"'
tests_fuzz_replay_plugstack_LDADD = $(FUZZ_REPLAY_LIBS)

TESTS += \
	tests/fuzz/replay_wire \
	tests/fuzz/replay_catalog \
	tests/fuzz/replay_catalog_cache \
	tests/fuzz/replay_meta \
	tests/fuzz/replay_peer \
	tests/fuzz/replay_step \
	tests/fuzz/replay_plugstack

EXTRA_DIST += tests/fuzz/corpus

# make fuzz: FUZZ_SECONDS per target (FUZZ_TARGETS to choose), with clang's
# libFuzzer, from FUZZ_SEED (1: the same inputs run after run, as CI wants;
# 0: a new seed each time). New inputs go to tests/fuzz/work/TARGET (not the
# corpus).
FUZZ_CC = clang
FUZZ_SECONDS = 60
FUZZ_SEED = 1
FUZZ_FLAGS = -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all
FUZZ_INCLUDES = -I$(top_builddir) $(AM_CPPFLAGS) $(DEFS) $(FUZZ_DEFINES) -I$(top_srcdir)/tests/fuzz \
	-I$(top_srcdir)/agent -I$(top_srcdir)/spank $(JANSSON_CFLAGS) $(UCX_CFLAGS) $(CRYPTO_CFLAGS)

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  case $$t in \
	    peer) extra="$(fuzz_extra_peer)";; \
	    step) extra="$(fuzz_extra_step)";; \
	    plugstack) extra="$(fuzz_extra_plugstack)";; \
	    *) extra=;; \
	  esac; \
	  sources=; for f in $(lib_libnopfs_core_la_SOURCES) tests/fuzz/fuzz_$$t.c $$extra; do \
	    case $$f in *.c) sources="$$sources $(top_srcdir)/$$f";; esac; done; \
	  echo "fuzz: building tests/fuzz/fuzz_$$t"; \
	  $(MKDIR_P) tests/fuzz/work/$$t; \
	  $(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_INCLUDES) -o tests/fuzz/fuzz_$$t $$sources \
	    $(JANSSON_LIBS) $(CRYPTO_LIBS) -lm -lpthread; \
	  echo "fuzz: running tests/fuzz/fuzz_$$t for $(FUZZ_SECONDS) s"; \
	  tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -seed=$(FUZZ_SEED) -timeout=10 \
	    -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix=tests/fuzz/crash-$$t- \
	    tests/fuzz/work/$$t $(top_srcdir)/tests/fuzz/corpus/$$t; \
	done

.PHONY: fuzz

clean-local: clean-fuzz
clean-fuzz:
	-rm -rf tests/fuzz/work $(FUZZ_TARGETS:%=tests/fuzz/fuzz_%)
.PHONY: clean-fuzz
