"""The ctypes mirrors of include/encdec.h's structs have the C compiler's
layout: every field's offset and every struct's size, from a program
compiled against the header."""

import ctypes
import shutil
import subprocess

import pytest

from conftest import ROOT


def test_struct_layout(tmp_path):
    from encdec import _native as N
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    lines = ['#include "encdec.h"', "#include <stddef.h>", "#include <stdio.h>",
             "int main(void) {"]
    for cname, cls in N.STRUCTS.items():
        lines.append(f'printf("{cname} size %zu\\n", sizeof({cname}));')
        for f, _ in cls._fields_:
            lines.append(f'printf("{cname} {f} %zu\\n", offsetof({cname}, {f}));')
    lines.append("return 0; }")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "layout"
    subprocess.run([cc, "-I", str(ROOT / "include"), str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    c = {}
    for line in out.splitlines():
        s, f, v = line.split()
        c[(s, f)] = int(v)
    for cname, cls in N.STRUCTS.items():
        assert ctypes.sizeof(cls) == c[(cname, "size")], cname
        for f, _ in cls._fields_:
            assert getattr(cls, f).offset == c[(cname, f)], f"{cname}.{f}"


def test_every_header_function_is_exported():
    from encdec import _native as N
    import re
    header = (ROOT / "include" / "encdec.h").read_text()
    names = re.findall(r"^ENCDEC_API [^(]*?\b(encdec_\w+)\(", header, re.M)
    assert len(names) > 50
    for n in names:
        assert hasattr(N.lib, n), n
