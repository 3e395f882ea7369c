"""setuptools hook of the weft package (the rest is in pyproject.toml).

An install from a clone remembers the clone's built library: build_py writes
weft/_where.py with the path of ../build/libweft.so where that exists, so
that "pip install ./python" after building weft (tools/run.sh demo, or
cmake) finds the library without installing it or setting PYWEFT_LIBRARY.
"""
import os

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    """build_py, then weft/_where.py naming the clone's libweft (or None)."""

    def run(self):
        super().run()
        here = os.path.dirname(os.path.abspath(__file__))
        lib = os.path.normpath(os.path.join(here, os.pardir, "build", "libweft.so"))
        with open(os.path.join(self.build_lib, "weft", "_where.py"), "w") as f:
            f.write('"""Where the clone this package was installed from built libweft."""\n')
            f.write("BUILD_LIBRARY = %r\n" % (lib if os.path.exists(lib) else None))


setup(cmdclass={"build_py": BuildPy})
