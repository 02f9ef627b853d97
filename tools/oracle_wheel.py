"""One module of a pinned PyPI wheel, loaded as an oracle without its
package's dependencies: the wheel is fetched once with
`pip download --no-deps` into build/oracle-wheels, and the module's source
is run from inside it (for modules that import only the standard library
and what .venv has)."""
import glob
import importlib.util
import os
import subprocess
import sys
import zipfile

WHEEL_DIR = "build/oracle-wheels"


def wheel_module(requirement, member):
    """requirement: "name==version"; member: the module's path in the wheel."""
    name, version = requirement.split("==")
    pattern = os.path.join(WHEEL_DIR, f"{name.replace('-', '_')}-{version}-*.whl")
    if not glob.glob(pattern):
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", WHEEL_DIR,
                        requirement], check=True)
    with zipfile.ZipFile(glob.glob(pattern)[0]) as z:
        src = z.read(member).decode("utf-8")
    spec = importlib.util.spec_from_loader(member.replace("/", "_")[:-3], loader=None)
    mod = importlib.util.module_from_spec(spec)
    exec(compile(src, member, "exec"), mod.__dict__)
    return mod


def wheel_package(requirement, stubs=()):
    """The wheel unpacked into build/oracle-wheels/NAME-VERSION and put first
    on sys.path, for a package whose modules import each other; each name in
    stubs is made an empty module first (dependencies the oracle's code path
    never calls)."""
    import types
    name, version = requirement.split("==")
    dest = os.path.join(WHEEL_DIR, f"{name}-{version}")
    if not os.path.isdir(dest):
        pattern = os.path.join(WHEEL_DIR, f"{name.replace('-', '_')}-{version}-*.whl")
        if not glob.glob(pattern):
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", WHEEL_DIR,
                            requirement], check=True)
        with zipfile.ZipFile(glob.glob(pattern)[0]) as z:
            z.extractall(dest)
    for stub in stubs:
        if stub not in sys.modules:
            try:
                __import__(stub)
            except ImportError:
                m = types.ModuleType(stub)
                m.__getattr__ = lambda attr: None
                sys.modules[stub] = m
    sys.path.insert(0, os.path.abspath(dest))
