"""Runtime, devices, drivers, options, errors, logging, traces."""

import json
import os

import numpy as np
import pytest

import weft
from conftest import devices_selected


def test_version_and_library():
    assert weft.version() == "0.1.0"
    assert os.path.exists(weft.library_path)
    assert weft.strerror(-3) == "out of device memory"
    assert weft.err_name(-1) == "WEFT_EINVAL"
    assert weft.param_type_size(weft.ParamType.F64) == 8
    assert weft.param_type_name(weft.ParamType.U32) == "u32"
    assert weft.place_policy_name(weft.PlacePolicy.HEFT) == "heft"


def test_devices_have_weft_info_facts(rt):
    assert rt.devices
    drv = devices_selected().split(",")[0].split(":")[0]
    for i, d in enumerate(rt.devices):
        assert d.index == i
        assert d.driver == drv
        assert d.name and isinstance(d.name, str)
        assert d.global_mem > 0 and d.max_alloc > 0
        assert d.compute_units > 0 and d.max_group_size > 0
        assert isinstance(d.type, weft.DeviceType)
        info = d.info()
        assert info["name"] == d.name and "cpuset" in info
        assert d.can_access_peer(d) in (True, False)
        assert repr(d).startswith("<weft.Device")
    names = [x.name for x in rt.drivers]
    assert drv in names
    mine = rt.drivers[names.index(drv)]
    assert mine.status == 0 and mine.ndevices == len(rt.devices)


def test_runtime_options(monkeypatch):
    monkeypatch.delenv("WEFT_DEVICES", raising=False)
    with weft.Runtime(devices="host", host_devices=2, host_threads=1) as rt:
        assert [d.driver for d in rt.devices] == ["host", "host"]
    with weft.Runtime(devices="sim", sim="devices=3,name=X100,mem=1G") as rt:
        assert len(rt.devices) == 3
        assert "X100" in rt.devices[0].name
        assert rt.devices[0].global_mem == 1 << 30
    with pytest.raises(ValueError, match="place_policy"):
        weft.Runtime(devices="host", place_policy="nowhere")
    with weft.Runtime(devices="host", place_policy="round-robin",
                      device_mem_limit=1 << 20) as rt:
        assert rt.devices


def test_errors_carry_code_and_message(monkeypatch):
    monkeypatch.delenv("WEFT_DEVICES", raising=False)
    with pytest.raises(weft.WeftError) as ei:
        weft.Runtime(devices="nosuchdriver")
    e = ei.value
    assert e.code < 0 and e.name.startswith("WEFT_E")
    assert "nosuchdriver" in e.message
    assert isinstance(e, weft.errors.error_class(e.code))
    assert weft.last_error() == e.message
    with pytest.raises(weft.NoDevice):
        weft.Runtime(devices="host:5")


def test_stats_are_a_dict(rt):
    s = rt.stats()
    assert set(s) >= {"h2d_bytes", "d2h_bytes", "pool_hits", "plan_events"}
    assert all(isinstance(v, int) for v in s.values())


def test_log_level_and_sink():
    old = weft.get_log_level()
    lines = []
    weft.set_log_sink(lambda lvl, sub, line: lines.append((lvl, sub, line)))
    try:
        weft.set_log_level("info")
        assert weft.get_log_level() == weft.LogLevel.INFO
        with weft.Runtime(devices="host") as rt:
            rt.wrap(np.zeros(4, np.float32)).close()
    finally:
        weft.set_log_level(old)
        weft.set_log_sink(None)
    assert all(isinstance(x[2], str) for x in lines)


def test_trace_file(tmp_path, kernels, rt):
    path = tmp_path / "trace.json"
    r = weft.Runtime(trace_file=str(path))
    k = r.module(kernels_source()).kernel("twice")
    a = np.ones(256, np.float32)
    b = r.wrap(a)
    g = r.graph()
    g.kernel(k, a.size, b, np.uint32(a.size))
    g.instantiate().run()
    del g, b, k
    r.close()
    import gc
    gc.collect()
    trace = json.loads(path.read_text())
    assert trace["traceEvents"] if isinstance(trace, dict) else trace


def kernels_source():
    from conftest import PORTABLE
    return PORTABLE
