# contrib/: the dependency installer, the demo, the dataset generator and the
# multi-node Slurm test cluster on one machine (contrib/cluster).

EXTRA_DIST += \
	contrib/demo \
	contrib/install-deps \
	contrib/make-dataset \
	contrib/cluster/README.md \
	.ci/run
dist_noinst_SCRIPTS += contrib/cluster/nopfs-cluster contrib/cluster/install-nopfs
