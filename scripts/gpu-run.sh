#!/bin/sh
# scripts/gpu-run.sh BUNDLE OUT [SECONDS]: on a GPU machine without MPI,
# as root, from the source tree whose build-gpu was made elsewhere (at
# the same path, or /work/main for the carried build's absolute paths):
# copies BUNDLE/root (scripts/gpu-bundle.sh) into / without replacing a
# file that is there, finds NCCL and the CUDA runtime (the system's, else
# Python's nvidia-* packages) for the loader, then runs scripts/gpu.sh
# OUT on the carried build for at most SECONDS (default 480).
# DCOLL_GPU_STEPS picks and orders gpu.sh's steps.
bundle=${1:?usage: scripts/gpu-run.sh BUNDLE OUT [SECONDS]}
out=${2:?usage: scripts/gpu-run.sh BUNDLE OUT [SECONDS]}
t0=$(date +%s)
src=$(cd "$(dirname "$0")/.." && pwd)
cp -a --update=none "$bundle/root/." / 2>/dev/null || cp -an "$bundle/root/." /
[ -e /usr/bin/mpirun ] || ln -s mpirun.openmpi /usr/bin/mpirun
[ -e /usr/bin/mpiexec ] || ln -s mpiexec.openmpi /usr/bin/mpiexec
conf=/etc/ld.so.conf.d/zz-dcoll-gpu-run.conf
: >"$conf"
pydir() {  # the lib folder of a Python nvidia-* package, if any
    python3 -c "import nvidia.$1 as m; print(list(m.__path__)[0] + '/lib')" 2>/dev/null
}
if ! ldconfig -p | grep -q 'libnccl\.so\.2 '; then
    d=$(pydir nccl); [ -d "$d" ] && echo "$d" >>"$conf"
fi
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -e "$cuda/lib64/libcudart.so.13" ] && ! ldconfig -p | grep -q libcudart; then
    d=$(pydir cuda_runtime); [ -d "$d" ] && echo "$d" >>"$conf"
fi
ldconfig
if [ "$src" != /work/main ] && [ ! -e /work/main ]; then
    mkdir -p /work && ln -s "$src" /work/main
fi
echo "gpu-run: set up in $(( $(date +%s) - t0 )) s; $(nvidia-smi -L | head -1); $(mpirun --version | head -1)"
ldd /work/main/build-gpu/cuda_layer/libdcoll_cuda.so | grep -E "nccl|cudart|not found"
export DCOLL_GPU_PREBUILT=1 DCOLL_TEST_LIMIT=${DCOLL_TEST_LIMIT:-60}
export DCOLL_SANITIZER_LIMIT=${DCOLL_SANITIZER_LIMIT:-120}
cd /work/main || exit 1
timeout -k 5 "${3:-480}" scripts/gpu.sh "$out"
rc=$?
echo "gpu-run: gpu.sh exit $rc after $(( $(date +%s) - t0 )) s"
cat "$out/summary.txt"
grep -E "^=== .*: (FAIL|TIMEOUT|SKIPPED)" "$out/tests.log" 2>/dev/null | head -20
exit $rc
