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
	contrib/examples/train_ddp.py \
	contrib/examples/train_ddp_nopfs.py \
	.ci/run
dist_noinst_SCRIPTS += contrib/cluster/nopfs-cluster contrib/cluster/install-nopfs
