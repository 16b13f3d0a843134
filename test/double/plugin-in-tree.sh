#!/bin/sh
# In the build tree, with no DCOLL_CUDA_PLUGIN, dcoll-info finds the CUDA
# plugin built beside the library (issue 28, finding 13): it reports the
# plugin it loaded, not "no CUDA plugin loaded".
# plugin-in-tree.sh DCOLL_INFO
unset DCOLL_CUDA_PLUGIN
out=$("$1" 2>&1)
echo "$out" | grep "nccl"
echo "$out" | grep -q "plugin .*cuda_layer/libdcoll_cuda.so" && exit 0
echo "FAIL: dcoll-info in the build tree did not load the tree's plugin"
exit 1
