"""setup.py: the build of the xstage Python package behind pyproject.toml.

The backend is setuptools (setuptools.build_meta), which Debian 12 ships as
python3-setuptools, so that `pip install --no-build-isolation .` works on a
machine with no package index: pip then builds with the setuptools and
wheel already installed (python3-setuptools, python3-wheel) and fetches
nothing. meson-python would need the xstage build rewritten in Meson (a
second build of the same sources to keep in step with CMake's), and
scikit-build-core is not in Debian 12; setuptools drives the project's own
CMake instead, which keeps one build description.

What the build does (class BuildPy): configure this tree with CMake in
build-python/cmake (Release; no tests, no CUDA or MPI backends, which the
Python package does not bind: XSTAGE_CMAKE_ARGS adds or overrides CMake
options), build libxstage and the xstage command, and put

- libxstage.so.MAJOR.MINOR inside the package (xstage/), where the package
  looks for it first;
- the xstage command in the environment's bin/;
- the published timings, example programs and profiles in the
  environment's share/xstage/, where the command and the package find them
  (the same layout as `cmake --install`).

The version is the one in include/xstage.h; python/xstage/_version.py must
say the same, or the build stops.
"""
import glob
import os
import re
import shlex
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = "build-python"  # relative to HERE: setuptools wants relative data_files


def header_version():
    """MAJOR.MINOR.PATCH from include/xstage.h."""
    with open(os.path.join(HERE, "include", "xstage.h")) as f:
        text = f.read()
    parts = []
    for key in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(r"^#define XSTAGE_VERSION_%s (\d+)$" % key, text, re.M)
        if not m:
            raise SystemExit("setup.py: no XSTAGE_VERSION_%s in include/xstage.h" % key)
        parts.append(m.group(1))
    return ".".join(parts)


def package_version():
    with open(os.path.join(HERE, "python", "xstage", "_version.py")) as f:
        m = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    return m.group(1) if m else None


VERSION = header_version()
if package_version() != VERSION:
    raise SystemExit("setup.py: python/xstage/_version.py says %s, include/xstage.h %s: "
                     "make them agree" % (package_version(), VERSION))
MAJOR_MINOR = ".".join(VERSION.split(".")[:2])
CMAKE_DIR = os.path.join(BUILD, "cmake")
LIBRARY = "libxstage.so.%s" % MAJOR_MINOR


def cmake_build():
    """Configure and build libxstage and the command in build-python/cmake."""
    cmake = shutil.which("cmake")
    if not cmake:
        raise SystemExit("setup.py: cmake not found: the package builds libxstage with "
                         "CMake (Debian: apt-get install cmake gcc pkg-config libjansson-dev)")
    args = ["-DCMAKE_BUILD_TYPE=Release", "-DXSTAGE_BUILD_TESTS=OFF",
            "-DXSTAGE_WITH_CUDA=OFF", "-DXSTAGE_WITH_MPI=OFF"]
    args += shlex.split(os.environ.get("XSTAGE_CMAKE_ARGS", ""))
    jobs = os.environ.get("JOBS") or str(os.cpu_count() or 2)
    subprocess.check_call([cmake, "-S", HERE, "-B", os.path.join(HERE, CMAKE_DIR)] + args)
    subprocess.check_call([cmake, "--build", os.path.join(HERE, CMAKE_DIR), "-j", jobs,
                           "--target", "xstage_shared", "xstage"])


class BuildPy(build_py):
    """The package's Python files, then libxstage built by CMake beside them."""

    def run(self):
        cmake_build()
        super().run()
        dest = os.path.join(self.build_lib, "xstage")
        os.makedirs(dest, exist_ok=True)
        # the real file under its SONAME (a wheel holds no symbolic links)
        self.copy_file(os.path.realpath(os.path.join(HERE, CMAKE_DIR, LIBRARY)),
                       os.path.join(dest, LIBRARY))


class BinaryDistribution(Distribution):
    """A wheel for this platform: the package carries a shared library."""

    def has_ext_modules(self):
        return True


def data(folder, pattern):
    return sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, folder, pattern)))


setup(
    version=VERSION,
    package_dir={"": "python"},
    packages=["xstage"],
    package_data={"xstage": ["py.typed"]},
    data_files=[
        ("bin", [os.path.join(CMAKE_DIR, "xstage")]),
        ("share/xstage/published", data("data/published", "*.csv") +
         data("data/published", "README.md")),
        ("share/xstage/examples", data("examples", "*.json")),
        ("share/xstage/profiles", data("profiles", "*.json")),
    ],
    cmdclass={"build_py": BuildPy},
    distclass=BinaryDistribution,
    options={"build": {"build_base": BUILD}, "egg_info": {"egg_base": BUILD}},
    zip_safe=False,
)
