#!/bin/bash
# plan-before-job.sh: before submitting, ask nopfs-plan what each node of the
# job would cache and how much the job would read from the PFS; submit
# ddp-unchanged.sbatch with the same shape only when the plan reads the
# dataset at most MAX_PFS times from the PFS (more: give more tiers or nodes).
#
#   DATA=/pfs/datasets/train TIERS=ram:16G ./plan-before-job.sh [SBATCH OPTION...]
#
# NODES (3), TASKS_PER_NODE (1), EPOCHS (2), SEED (42), TIERS (ram:8G, every
# node's; give sizes: N% would be this host's memory), MAX_PFS (1.1).
# Options after the script's name go to sbatch.
set -euo pipefail
: "${DATA:?set DATA to the dataset (an ImageFolder tree)}"
EXAMPLES=${EXAMPLES:-$(cd "$(dirname "$0")" && pwd)}
export DATA EXAMPLES
export NODES=${NODES:-3} TASKS_PER_NODE=${TASKS_PER_NODE:-1} EPOCHS=${EPOCHS:-2}
export SEED=${SEED:-42} TIERS=${TIERS:-ram:8G}
MAX_PFS=${MAX_PFS:-1.1}
PYTHON=${PYTHON:-python3}

plan=(nopfs-plan --dataset "$DATA" --nodes "$NODES" --tasks-per-node "$TASKS_PER_NODE"
	--epochs "$EPOCHS" --seed "$SEED" --tier "$TIERS")
"${plan[@]}"
# the predicted PFS reads of nopfs's placement, in dataset sizes
times=$("${plan[@]}" --json | "$PYTHON" -c '
import json, sys
plan = json.load(sys.stdin)
print(next(p["pfs_bytes_vs_dataset"] for p in plan["policies"] if p["policy"] == "owner-first"))')
if ! awk -v x="$times" -v max="$MAX_PFS" 'BEGIN { exit !(x <= max) }'; then
	echo "plan-before-job.sh: the job would read the dataset $times times from the PFS" \
		"(more than MAX_PFS=$MAX_PFS): give more TIERS or NODES; not submitted" >&2
	exit 1
fi
echo "plan-before-job.sh: the PFS would be read $times times the dataset: submitting"
sbatch --nodes="$NODES" --ntasks-per-node="$TASKS_PER_NODE" --export=ALL "$@" \
	"$EXAMPLES/ddp-unchanged.sbatch"
