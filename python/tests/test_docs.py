"""Every public name of the package has a docstring."""

import inspect

import weft
import weft.errors


def _public(obj):
    for name, v in vars(obj).items():
        if not name.startswith("_"):
            yield name, v


def test_every_public_name_has_a_docstring():
    missing = []
    for mod in (weft, weft.errors):
        for name in getattr(mod, "__all__", [n for n, _ in _public(mod)]):
            v = getattr(mod, name)
            if inspect.ismodule(v) or isinstance(v, (int, str)):
                continue
            if not (getattr(v, "__doc__", None) or "").strip():
                missing.append("%s.%s" % (mod.__name__, name))
            if inspect.isclass(v) and v.__module__.startswith("weft"):
                for m, f in _public(v):
                    if callable(f) or isinstance(f, property):
                        if not (f.__doc__ or "").strip():
                            missing.append("%s.%s.%s" % (mod.__name__, name, m))
    assert missing == []
