# python/nopfs: the Python package (nopfs.Dataset through libnopfs, and
# nopfs.report), installed in $(pythondir) (configure: --with-pythondir).
# _paths.py tells the installed package where libnopfs is.

if HAVE_PYTHON
nopfspythondir = $(pythondir)/nopfs
nopfspython_PYTHON = \
	python/nopfs/__init__.py \
	python/nopfs/_capi.py \
	python/nopfs/dataset.py \
	python/nopfs/report.py
nodist_nopfspython_PYTHON = python/nopfs/_paths.py
noinst_DATA = python/nopfs/_paths.py
endif
python/nopfs/_paths.py: python/nopfs/_paths.py.in Makefile
	$(AM_V_GEN)$(MKDIR_P) python/nopfs && \
	sed -e 's|@libdir[@]|$(libdir)|g' $(srcdir)/python/nopfs/_paths.py.in >$@.tmp && \
	mv -f $@.tmp $@
CLEANFILES += python/nopfs/_paths.py
EXTRA_DIST += python/nopfs/_paths.py.in
