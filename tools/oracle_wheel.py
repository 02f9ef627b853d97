"""One module of a pinned PyPI wheel, loaded as an oracle without its
package's dependencies: the wheel is fetched once with
`pip download --no-deps` into build/oracle-wheels, and the module's source
is run from inside it (for modules that import only the standard library
and what .venv has)."""
import glob
import importlib.util
import json
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


def _unpacked(requirement):
    """The wheel of requirement ("name==version") unpacked into
    build/oracle-wheels/NAME-VERSION (fetched once): its folder."""
    name, version = requirement.split("==")
    dest = os.path.join(WHEEL_DIR, f"{name}-{version}")
    if not os.path.isdir(dest):
        pattern = os.path.join(WHEEL_DIR, f"{name.replace('-', '_')}-{version}-*.whl")
        if not glob.glob(pattern):
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", WHEEL_DIR,
                            requirement], check=True)
        with zipfile.ZipFile(glob.glob(pattern)[0]) as z:
            z.extractall(dest)
    return os.path.abspath(dest)


def wheel_package(requirement, deps=()):
    """The package of requirement and the pinned dependencies deps it imports
    (each "name==version"), unpacked from their wheels and put first on
    sys.path, for a package whose modules import each other."""
    for r in (requirement,) + tuple(deps):
        sys.path.insert(0, _unpacked(r))


def write_cases(path, oracle, cases, **extra):
    """A golden file: {"oracle": ..., extra..., "cases": [...]}, UTF-8, one
    space of indent, and a count on standard output."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"oracle": oracle, **extra, "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(cases)} cases -> {path}")
