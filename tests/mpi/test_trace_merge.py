"""The merged trace of 2 ranks (tools/weft-mpi-trace): run
examples/mpi_stencil2d under mpiexec with --trace, merge, and check the
file: one process per rank, every transfer of every launch an arrow from
its send (on one rank) to its receive (on the other), none going back in
time, and every rank's slices inside the merged timeline.

    test_trace_merge.py TOOL DIR MPIEXEC... -- EXAMPLE ARGS...
"""
import json
import os
import subprocess
import sys


def main(argv):
    tool, workdir = argv[0], argv[1]
    sep = argv.index("--")
    mpiexec, example = argv[2:sep], argv[sep + 1:]
    os.makedirs(workdir, exist_ok=True)
    prefix = os.path.join(workdir, "trace")
    for name in os.listdir(workdir):
        os.remove(os.path.join(workdir, name))
    launches = 2
    run = subprocess.run(mpiexec + example + ["--launches", str(launches),
                                              "--trace", prefix],
                         capture_output=True, text=True)
    out = run.stdout
    print(out, end="")
    if run.returncode != 0:
        sys.exit(f"the example failed ({run.returncode}):\n{run.stderr}")
    transfers = int(out.split("transfers per launch: ")[1].split()[0])
    assert transfers > 0, out
    merged = prefix + ".merged.json"
    run = subprocess.run([sys.executable, tool, "-o", merged, prefix],
                         capture_output=True, text=True)
    print(run.stdout, end="")
    if run.returncode != 0:
        sys.exit(f"weft-mpi-trace failed ({run.returncode}):\n{run.stderr}")
    with open(merged) as f:
        trace = json.load(f)
    ev = trace["traceEvents"]
    procs = sorted(e["args"]["name"] for e in ev
                   if e.get("name") == "process_name")
    assert procs == ["rank 0", "rank 1"], procs
    starts = {e["id"]: e for e in ev if e.get("cat") == "mpi"
              and e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e.get("cat") == "mpi"
            and e["ph"] == "f"}
    assert len(starts) == transfers * launches, (len(starts), transfers)
    assert starts.keys() == ends.keys()
    for i, s in starts.items():
        f = ends[i]
        assert s["pid"] != f["pid"], s  # from one rank to the other
        assert s["args"]["from"] + 1 == s["pid"]
        assert s["args"]["to"] + 1 == f["pid"]
        assert s["args"]["via"] == "mpi", s  # host devices: host copies
        # the receive ends after the send started (one host's clock)
        assert f["ts"] >= s["ts"] - 1.0, (s, f)
    slices = [e for e in ev if e.get("ph") == "X"]
    assert {e["pid"] for e in slices} == {1, 2}
    assert all(e["ts"] >= 0 for e in slices)
    print(f"merged trace: {len(slices)} slices, {len(starts)} mpi arrows: ok")


if __name__ == "__main__":
    main(sys.argv[1:])
