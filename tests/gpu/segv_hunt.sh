#!/bin/bash
# Runs a command N times with tests/gpu/segv_trace.c preloaded and prints,
# for each run that died of a signal, the crashing thread and its stack
# with weft's frames symbolised (addr2line). From the repository root:
#     tests/gpu/segv_hunt.sh N OUTDIR COMMAND...
# e.g. WEFT_DEVICES=opencl WEFT_PLACE=single tests/gpu/segv_hunt.sh 20 out \
#          build-gpu/tests/oracle/oracle --graphs 50 --seed 10000
set -u
n=$1 out=$2
shift 2
mkdir -p "$out"
so=$(realpath "$out")/segv_trace.so
cc -shared -fPIC -o "$so" tests/gpu/segv_trace.c || exit 1
died=0
for i in $(seq 1 "$n"); do
    LD_PRELOAD=$so timeout 120 "$@" >"$out/run$i.log" 2>&1
    rc=$?
    if ((rc > 128)) || grep -q "^segv_trace:" "$out/run$i.log"; then
        died=$((died + 1))
        echo "=== run $i: rc $rc"
        grep -A40 "^segv_trace:" "$out/run$i.log" | while IFS= read -r line; do
            echo "$line"
            # "path(+0xOFF)[...]" or "path(sym+0xOFF)": symbolise weft's own
            if [[ $line =~ ^([^\(]+)\(\+(0x[0-9a-f]+)\) ]]; then
                addr2line -f -i -p -e "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" 2>/dev/null | sed 's/^/      /'
            fi
        done
    fi
done
echo "segv_hunt: $died of $n runs died"
