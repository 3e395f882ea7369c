#!/bin/bash
# Runs a test binary; if it is still running after SECS seconds, shows its
# threads (name, state, kernel wait) and the stack of the thread that takes
# SIGQUIT (tests/common/wt_test.c, WT_HANG_DUMP), symbolised with addr2line,
# then kills it. For hangs on the GPU machine, which has no debugger:
#     tests/gpu/hang_dump.sh SECS BINARY [ARGS...]
secs=$1
shift
WT_HANG_DUMP=1 "$@" >hang_dump.out 2>&1 &
pid=$!
for _ in $(seq "$secs"); do
    sleep 1
    kill -0 $pid 2>/dev/null || { wait $pid; rc=$?; tail -3 hang_dump.out; echo "exited: rc=$rc"; exit $rc; }
done
echo "== still running after $secs s: threads"
for t in /proc/$pid/task/*; do
    echo "$(basename "$t") $(cat "$t/comm") $(awk '{print $3}' "$t/stat") wchan=$(cat "$t/wchan" 2>/dev/null) syscall=$(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"
done
kill -QUIT $pid
sleep 2
echo "== output tail"
grep -v "weft\[debug\] \(fault\|error\)" hang_dump.out | tail -400 | while IFS= read -r line; do
    echo "$line"
    if [[ $line =~ ^(/[^\(]+)\(([^\)]*)\) ]]; then
        f=${BASH_REMATCH[1]} off=${BASH_REMATCH[2]}
        [[ $off =~ ^\+0x ]] && addr2line -f -p -e "$f" "${off#+}" 2>/dev/null | sed 's/^/      /'
    fi
done
kill -KILL $pid 2>/dev/null
exit 124
