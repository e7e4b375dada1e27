#!/usr/bin/env python3
"""train_ddp.py with one change: the dataset is nopfs.Dataset, whose samples
come zero-copy from the node's nopfs agent through libnopfs (the files when
there is no agent). features() reads each sample in place from the agent's
mapping; nothing else differs.
"""
import nopfs

import train_ddp


def nopfs_dataset(root):
    return nopfs.Dataset(root, decode=train_ddp.features)


if __name__ == "__main__":
    train_ddp.main(nopfs_dataset)
