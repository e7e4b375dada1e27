#!/bin/bash
# test_multinode.sh with node 1's data plane unable to reach anyone.
exec "$(dirname "$0")/test_multinode.sh" broken-peer
