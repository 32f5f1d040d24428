#!/usr/bin/env python3
"""Assembles the ckt wheel from python/ckt/ and a built libckt_fmha.so, offline, with the
standard library only (a wheel is a zip: the package, NAME.dist-info/METADATA, WHEEL, RECORD).

    python3 python/build_wheel.py --lib bazel-bin/lib/fmha/libckt_fmha.so --backend cpu --out dist

Normally run by tools/build_wheel.sh, which builds the library first (docs/python.md). The
wheel is reproducible: fixed timestamps and order. Prints the wheel's path.
"""
import argparse
import base64
import hashlib
import os
import re
import sysconfig
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(HERE, "ckt")
SOURCES = ["__init__.py", "_lib.py", "_tensor.py", "fmha.py"]
DATE = (1980, 1, 1, 0, 0, 0)


def version():
    with open(os.path.join(PKG, "__init__.py")) as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)


def platform_tag():
    """linux_x86_64 and the like: the bundled library is native code."""
    return re.sub(r"[-.]", "_", sysconfig.get_platform())


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def build(lib, backend, out, commit=""):
    ver, tag = version(), f"py3-none-{platform_tag()}"
    dist = f"ckt-{ver}.dist-info"
    files = []  # (path in the wheel, bytes, executable)
    for name in SOURCES:
        with open(os.path.join(PKG, name), "rb") as f:
            files.append((f"ckt/{name}", f.read(), False))
    files.append(("ckt/_build.py", (f'"""Written by python/build_wheel.py: how the bundled libckt_fmha.so was built."""\n'
                                    f'BACKEND = "{backend}"\nCOMMIT = "{commit}"\n').encode(), False))
    with open(lib, "rb") as f:
        files.append(("ckt/libckt_fmha.so", f.read(), True))
    metadata = (f"Metadata-Version: 2.1\nName: ckt\nVersion: {ver}\n"
                f"Summary: ckt's FMHA kernels (libckt_fmha, {backend} build) for Python and PyTorch, through ctypes\n"
                f"License: see the ckt repository\nRequires-Python: >=3.8\n"
                f"Description-Content-Type: text/markdown\n\n"
                f"The ckt package: docs/python.md of the ckt repository.\n").encode()
    wheel = (f"Wheel-Version: 1.0\nGenerator: ckt python/build_wheel.py\nRoot-Is-Purelib: false\n"
             f"Tag: {tag}\n").encode()
    files += [(f"{dist}/METADATA", metadata, False), (f"{dist}/WHEEL", wheel, False),
              (f"{dist}/top_level.txt", b"ckt\n", False)]
    record = "\n".join([_record_line(p, d) for p, d, _ in files] + [f"{dist}/RECORD,,"]) + "\n"
    files.append((f"{dist}/RECORD", record.encode(), False))

    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"ckt-{ver}-{tag}.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, exe in files:
            info = zipfile.ZipInfo(name, DATE)
            info.external_attr = (0o755 if exe else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True, help="the libckt_fmha.so to bundle")
    ap.add_argument("--backend", default="cpu", help="cpu | nvidia | amd (recorded in ckt._build)")
    ap.add_argument("--out", default="dist", help="the directory for the wheel")
    ap.add_argument("--commit", default="", help="the source commit (recorded in ckt._build)")
    a = ap.parse_args()
    print(build(a.lib, a.backend, a.out, a.commit))


if __name__ == "__main__":
    main()
