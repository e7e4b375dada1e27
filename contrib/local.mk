# contrib/: the dependency installer, the demo, the dataset generator, the
# multi-node Slurm test cluster on one machine (contrib/cluster) and the
# example jobs (contrib/examples, run by tests/cluster/test_examples.sh).

EXTRA_DIST += \
	contrib/demo \
	contrib/install-deps \
	contrib/make-dataset \
	contrib/cluster/README.md \
	contrib/examples/README.md \
	contrib/examples/ddp-unchanged.sbatch \
	contrib/examples/ddp-dataset.sbatch \
	contrib/examples/mpi.sbatch \
	contrib/examples/plan-before-job.sh \
	contrib/examples/resumed.sbatch \
	contrib/examples/train_ddp.py \
	contrib/examples/train_ddp_nopfs.py \
	.ci/run
dist_noinst_SCRIPTS += contrib/cluster/nopfs-cluster contrib/cluster/install-nopfs

# The example plugstack.conf.d/nopfs.conf, naming where the plugin is installed.
plugstackexampledir = $(docdir)/examples/plugstack.conf.d
plugstackexample_DATA = contrib/plugstack.conf.d/nopfs.conf
CLEANFILES += contrib/plugstack.conf.d/nopfs.conf
EXTRA_DIST += contrib/plugstack.conf.d/nopfs.conf.in
contrib/plugstack.conf.d/nopfs.conf: contrib/plugstack.conf.d/nopfs.conf.in Makefile
	$(AM_V_GEN)$(MKDIR_P) contrib/plugstack.conf.d && \
	sed -e 's|@SPANK_PLUGIN_DIR[@]|$(spankdir)|g' \
		$(srcdir)/contrib/plugstack.conf.d/nopfs.conf.in >$@.tmp && \
	mv -f $@.tmp $@

# The RPM spec (configure writes the version in); shipped generated, so that
# rpmbuild -tb finds it in the tarball.
EXTRA_DIST += contrib/rpm/nopfs.spec.in contrib/rpm/nopfs.spec
