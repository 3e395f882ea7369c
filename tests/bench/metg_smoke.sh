#!/bin/sh
# metg_smoke.sh METG [corrupt]
# Without corrupt: bench/metg --quick must pass its task validation and
# print every figure, as text and as JSON. With corrupt: a wrong cell
# written by point 0 of step 5 must end the bench with a failure that names
# that task, caught by a reader (stencil) or by the check after the launch
# (trivial), for host tasks, host kernels, OpenMP, StarPU and the static
# threads alike (OpenMP and StarPU where built).
set -u
metg=$1
out=${TMPDIR:-/tmp}/metg_smoke.$$
trap 'rm -f "$out" "$out.err"' EXIT
fail() {
    echo "metg_smoke: $*" >&2
    cat "$out" "$out.err" >&2 2>/dev/null
    exit 1
}

if [ "${2:-}" = corrupt ]; then
    for v in first kernels openmp starpu threads; do
        for p in stencil trivial; do
            if "$metg" --quick --patterns $p --variants $v --corrupt 5 \
                >"$out" 2>"$out.err"; then
                # only a variant this build lacks may pass
                grep -q "^# $v: skipped" "$out" && continue
                fail "$p $v: a wrong cell passed"
            fi
            case $p in
            stencil) want='read the output of (step 5, point 0)' ;;
            trivial) want='task (step 5, point 0) wrote' ;;
            esac
            grep -qF "validation failed" "$out.err" &&
                grep -qF "$want" "$out.err" ||
                fail "$p $v: the failure does not name (step 5, point 0)"
        done
    done
    echo "metg_smoke: every corrupt cell was named"
    exit 0
fi

"$metg" --quick >"$out" 2>"$out.err" || fail "metg --quick failed"
variants="weft first launch|weft build + first launch|weft relaunch|weft kernels relaunch|static threads|openmp"
grep -q '^# openmp: skipped' "$out" &&
    variants="weft first launch|weft build + first launch|weft relaunch|weft kernels relaunch|static threads"
# StarPU is in the default variants where it was built, which says so.
grep -q '^# starpu [0-9]' "$out" && variants="$variants|starpu"
grep -q '^peak: [0-9.]* GFLOP/s$' "$out" || fail "no peak"
n=0
for p in trivial stencil nearest random; do
    IFS='|'
    for v in $variants; do
        grep -q "^metg $p $v: [0-9.]* us" "$out" || fail "no metg $p $v"
        grep -q "^efficiency $p $v @1ms: [0-9.]*$" "$out" ||
            fail "no efficiency $p $v"
        grep -q "^cpu $p $v @1ms: [0-9.]* cores$" "$out" ||
            fail "no cpu $p $v"
        grep -q "^in flight $p $v @1ms: [0-9.]* tasks$" "$out" ||
            fail "no in flight $p $v"
        n=$((n + 4))
    done
    unset IFS
done
grep -q '^stencil weft relaunch / static threads: [0-9.]* x$' "$out" ||
    fail "no stencil weft relaunch / static threads"
"$metg" --quick --patterns stencil --variants relaunch --json >"$out" \
    2>"$out.err" || fail "metg --json failed"
head -c 16 "$out" | grep -q '^{"bench": "metg"' || fail "not JSON"
tail -n 1 "$out" | grep -q '^]}$' || fail "JSON not closed"
grep -q '"name": "metg stencil weft relaunch"' "$out" || fail "no JSON figure"
echo "metg_smoke: validation passed, $n figures and the peak printed"
