# tests/lib: Check unit tests of each lib module, and the cross-checks
# against Debian's torch and torchvision.

check_PROGRAMS += \
	tests/lib/common/check_units \
	tests/lib/common/check_fdio \
	tests/lib/common/check_crc32c \
	tests/lib/common/check_atomic_file \
	tests/lib/common/check_clock \
	tests/lib/common/check_dirs \
	tests/lib/common/check_private \
	tests/lib/common/check_log \
	tests/lib/common/check_optable \
	tests/lib/common/check_pace \
	tests/lib/catalog/check_catalog \
	tests/lib/catalog/check_catalog_cache \
	tests/lib/catalog/check_meta \
	tests/lib/plan/check_layout \
	tests/lib/plan/check_model \
	tests/lib/plan/check_placement \
	tests/lib/plan/check_sampler \
	tests/lib/task/check_wire \
	tests/lib/task/check_wire_io \
	tests/lib/task/check_runtime \
	tests/lib/task/check_client \
	tests/lib/report/check_report

tests_lib_common_check_units_SOURCES = tests/lib/common/check_units.c
tests_lib_common_check_units_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_common_check_units_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_common_check_units_LDADD = $(UNIT_TEST_LIBS)
tests_lib_common_check_crc32c_SOURCES = tests/lib/common/check_crc32c.c
tests_lib_common_check_crc32c_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_common_check_crc32c_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_common_check_crc32c_LDADD = $(UNIT_TEST_LIBS)

tests_lib_common_check_fdio_SOURCES = tests/lib/common/check_fdio.c
tests_lib_common_check_fdio_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_common_check_fdio_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_common_check_fdio_LDADD = $(UNIT_TEST_LIBS)
tests_lib_common_check_atomic_file_SOURCES = tests/lib/common/check_atomic_file.c
tests_lib_common_check_atomic_file_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_common_check_atomic_file_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_common_check_atomic_file_LDADD = $(UNIT_TEST_LIBS)
tests_lib_common_check_pace_SOURCES = tests/lib/common/check_pace.c
tests_lib_common_check_pace_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_common_check_pace_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_common_check_pace_LDADD = $(UNIT_TEST_LIBS)
tests_lib_common_check_clock_SOURCES = tests/lib/common/check_clock.c
tests_lib_common_check_clock_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_common_check_clock_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_common_check_clock_LDADD = $(UNIT_TEST_LIBS)
tests_lib_common_check_dirs_SOURCES = tests/lib/common/check_dirs.c
tests_lib_common_check_dirs_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_common_check_dirs_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_common_check_dirs_LDADD = $(UNIT_TEST_LIBS)
tests_lib_common_check_private_SOURCES = tests/lib/common/check_private.c
tests_lib_common_check_private_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_common_check_private_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_common_check_private_LDADD = $(UNIT_TEST_LIBS)
tests_lib_common_check_log_SOURCES = tests/lib/common/check_log.c
tests_lib_common_check_log_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_common_check_log_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_common_check_log_LDADD = $(UNIT_TEST_LIBS)
tests_lib_common_check_optable_SOURCES = tests/lib/common/check_optable.c
tests_lib_common_check_optable_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_common_check_optable_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_common_check_optable_LDADD = $(UNIT_TEST_LIBS)

tests_lib_catalog_check_catalog_SOURCES = tests/lib/catalog/check_catalog.c
tests_lib_catalog_check_catalog_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_catalog_check_catalog_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_catalog_check_catalog_LDADD = $(UNIT_TEST_LIBS)
tests_lib_catalog_check_catalog_cache_SOURCES = tests/lib/catalog/check_catalog_cache.c
tests_lib_catalog_check_catalog_cache_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_catalog_check_catalog_cache_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_catalog_check_catalog_cache_LDADD = $(UNIT_TEST_LIBS)
tests_lib_catalog_check_meta_SOURCES = tests/lib/catalog/check_meta.c
tests_lib_catalog_check_meta_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_catalog_check_meta_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_catalog_check_meta_LDADD = $(UNIT_TEST_LIBS)

tests_lib_plan_check_layout_SOURCES = tests/lib/plan/check_layout.c
tests_lib_plan_check_layout_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_plan_check_layout_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_plan_check_layout_LDADD = $(UNIT_TEST_LIBS)
tests_lib_plan_check_model_SOURCES = tests/lib/plan/check_model.c
tests_lib_plan_check_model_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_plan_check_model_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_plan_check_model_LDADD = $(UNIT_TEST_LIBS)
tests_lib_plan_check_placement_SOURCES = tests/lib/plan/check_placement.c
tests_lib_plan_check_placement_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_plan_check_placement_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_plan_check_placement_LDADD = $(UNIT_TEST_LIBS)
tests_lib_plan_check_sampler_SOURCES = tests/lib/plan/check_sampler.c
tests_lib_plan_check_sampler_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_plan_check_sampler_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_plan_check_sampler_LDADD = $(UNIT_TEST_LIBS)

tests_lib_task_check_wire_SOURCES = tests/lib/task/check_wire.c
tests_lib_task_check_wire_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_task_check_wire_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_task_check_wire_LDADD = $(UNIT_TEST_LIBS)
tests_lib_task_check_wire_io_SOURCES = tests/lib/task/check_wire_io.c
tests_lib_task_check_wire_io_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_task_check_wire_io_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_task_check_wire_io_LDADD = $(UNIT_TEST_LIBS)
tests_lib_task_check_runtime_SOURCES = tests/lib/task/check_runtime.c
tests_lib_task_check_runtime_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_task_check_runtime_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_task_check_runtime_LDADD = $(UNIT_TEST_LIBS)
tests_lib_task_check_client_SOURCES = \
	tests/lib/task/check_client.c \
	tests/helpers/fake_agent.c \
	tests/helpers/fake_agent.h
tests_lib_task_check_client_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_task_check_client_CFLAGS = $(UNIT_TEST_FLAGS)
tests_lib_task_check_client_LDADD = lib/libnopfs.la $(UNIT_TEST_LIBS)
tests_lib_task_check_client_LDFLAGS = $(AM_LDFLAGS) -no-install

tests_lib_report_check_report_SOURCES = tests/lib/report/check_report.c
tests_lib_report_check_report_CPPFLAGS = $(UNIT_TEST_CPPFLAGS)
tests_lib_report_check_report_CFLAGS = $(UNIT_TEST_FLAGS) $(JANSSON_CFLAGS)
tests_lib_report_check_report_LDADD = lib/report/libnopfs_report.la $(UNIT_TEST_LIBS) $(JANSSON_LIBS)

TESTS += \
	tests/lib/common/check_units \
	tests/lib/common/check_fdio \
	tests/lib/common/check_crc32c \
	tests/lib/common/check_atomic_file \
	tests/lib/common/check_clock \
	tests/lib/common/check_dirs \
	tests/lib/common/check_private \
	tests/lib/common/check_log \
	tests/lib/common/check_optable \
	tests/lib/common/check_pace \
	tests/lib/plan/check_layout \
	tests/lib/plan/check_model \
	tests/lib/plan/check_placement \
	tests/lib/plan/check_sampler \
	tests/lib/plan/check_sampler_torch.sh \
	tests/lib/catalog/check_catalog \
	tests/lib/catalog/check_catalog_cache \
	tests/lib/catalog/check_catalog_torch.sh \
	tests/lib/catalog/check_meta \
	tests/lib/task/check_wire \
	tests/lib/task/check_wire_io \
	tests/lib/task/check_runtime \
	tests/lib/task/check_client \
	tests/lib/task/check_client_ctypes.sh \
	tests/lib/task/check_preload.sh \
	tests/lib/task/check_preload_meta.sh \
	tests/lib/report/check_report
EXTRA_DIST += \
	tests/data/sampler_vectors.txt \
	tests/lib/plan/sampler_torch.py \
	tests/lib/plan/check_sampler_torch.sh \
	tests/lib/catalog/catalog_torch.py \
	tests/lib/catalog/odd_tree.py \
	tests/lib/catalog/check_catalog_torch.sh \
	tests/lib/task/check_client_ctypes.sh \
	tests/lib/task/client_ctypes.py \
	tests/lib/task/check_preload.sh \
	tests/lib/task/preload_python.py \
	tests/lib/task/check_preload_meta.sh \
	tests/lib/task/preload_meta.py
