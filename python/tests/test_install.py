"""`pip install ./python` into a throwaway virtual environment: a pure
wheel (py3-none-any, no compiled file), and the installed package, away
from the checkout, loading the library named by ASSOC_LIBRARY."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OFFLINE = ("connection", "network is unreachable", "temporary failure in name resolution", "no matching distribution")


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, **kw)


class Install(unittest.TestCase):
    def test_pip_install_is_pure_python(self):
        lib = os.path.join(ROOT, "build", "libassoc.so")
        if not os.path.exists(lib):
            self.skipTest("no build/libassoc.so (make build/libassoc.so)")
        tmp = tempfile.mkdtemp(prefix="assoc-pip-")
        try:
            # a copy: pip builds in the source tree, leaving build/ and egg-info behind
            src = os.path.join(tmp, "src")
            shutil.copytree(os.path.join(ROOT, "python"), src,
                            ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
            venv = os.path.join(tmp, "venv")
            r = run([sys.executable, "-m", "venv", venv])
            if r.returncode:
                self.skipTest("python -m venv fails here: %s" % r.stdout.strip().splitlines()[-1:])
            py = os.path.join(venv, "bin", "python")
            # few retries: offline, the skip comes in seconds (the build's own pip inherits these)
            quick = dict(os.environ, PIP_RETRIES="1", PIP_TIMEOUT="15")
            r = run([py, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check", "-q", src],
                    timeout=300, env=quick)
            offline = [l.strip() for l in r.stdout.splitlines() if any(w in l.lower() for w in OFFLINE)]
            if r.returncode and offline:
                self.skipTest("pip cannot fetch setuptools to build the package: %s" % offline[-1][:200])
            self.assertEqual(r.returncode, 0, r.stdout)
            site = glob.glob(os.path.join(venv, "lib", "python*", "site-packages"))[0]
            files = sorted(os.path.relpath(p, site) for p in glob.glob(os.path.join(site, "assoc", "**"),
                                                                        recursive=True) if os.path.isfile(p))
            self.assertIn(os.path.join("assoc", "__init__.py"), files)
            self.assertIn(os.path.join("assoc", "torch.py"), files)
            compiled = [f for f in files if not f.endswith((".py", ".pyc"))]
            self.assertEqual(compiled, [], "nothing but Python is installed")
            wheel = glob.glob(os.path.join(site, "assoc-*.dist-info", "WHEEL"))
            self.assertEqual(len(wheel), 1)
            with open(wheel[0]) as f:
                meta = f.read()
            self.assertIn("Root-Is-Purelib: true", meta)
            self.assertIn("Tag: py3-none-any", meta)
            # away from the checkout, without numpy or torch: load and check
            env = dict(os.environ, ASSOC_LIBRARY=lib)
            env.pop("PYTHONPATH", None)
            code = ("import sys, assoc; s = assoc.load(sys.argv[1]); print(assoc.library_path()); "
                    "print(s.name, s.check(trials=50).ok, 'numpy' in sys.modules, 'torch' in sys.modules)")
            r = run([py, "-c", code, os.path.join(ROOT, "specs", "welford.yaml")], cwd=tmp, env=env)
            self.assertEqual(r.returncode, 0, r.stdout)
            self.assertEqual(r.stdout.split(), [lib, "welford", "True", "False", "False"])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
