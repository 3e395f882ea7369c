#!/bin/bash
# Issue 17's two failures seen on two GPUs (after tests/gpu/session_check.sh
# or any build of build-gpu): the CUDA event-wait test that stalled, under
# the hang dump, three times; and the OpenCL failure injection that exited
# 255 on NVIDIA's OpenCL with two devices, traced. From the root:
#     source .devkit/setup.sh && tests/gpu/session_17.sh OUTDIR
set -u
out=$1
mkdir -p "$out"
b=build-gpu
for i in 1 2 3; do
    echo "=== external_events_cuda test_event_wait, run $i"
    (cd "$out" && WEFT_DEVICES=cuda WEFT_TEST_CASE=test_event_wait \
        "$OLDPWD/tests/gpu/hang_dump.sh" 45 "$OLDPWD/$b/tests/sched/native/test_external" 2>&1 | tail -60)
done
echo "=== test_opencl failure_injection on NVIDIA's OpenCL"
WT_TRACE=1 WT_FAULT_FILTER=opencl. WEFT_DEVICES=opencl timeout 120 \
    $b/tests/drivers/opencl/test_opencl failure_injection >"$out/ocl_fi.log" 2>&1
echo "rc=$?"
tail -30 "$out/ocl_fi.log"
