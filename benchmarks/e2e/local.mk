# benchmarks/e2e: the end-to-end benchmark (run.sh on the test cluster): the
# training emulation in Python (train.py) and as a C/MPI program (train_mpi,
# built when configure finds MPI), and the analysis (analyze.py).

if HAVE_MPI
noinst_PROGRAMS += benchmarks/e2e/train_mpi
endif
benchmarks_e2e_train_mpi_SOURCES = \
	benchmarks/e2e/train_mpi.c \
	benchmarks/e2e/train_mpi.h \
	benchmarks/e2e/train_mpi_options.c
benchmarks_e2e_train_mpi_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
benchmarks_e2e_train_mpi_LDADD = lib/libnopfs_core.la $(MPI_LIBS) -lm

dist_noinst_SCRIPTS += benchmarks/e2e/run.sh
EXTRA_DIST += \
	benchmarks/e2e/analyze.py \
	benchmarks/e2e/train.py
