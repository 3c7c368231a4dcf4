"""The installable suite: build the wheel, install it into a fresh venv, run it from another project.

Slow tier (`make test-slow`): builds with pip (setuptools from the index) and installs capproof's
dependencies into a new venv (about a minute with a warm pip cache).
"""

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.slow


def _run(cmd, cwd, **kw):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900, **kw)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    base = tmp_path_factory.mktemp("install")
    wheels = base / "wheels"
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), ROOT], cwd=base)
    assert built.returncode == 0, built.stderr
    (wheel,) = list(wheels.glob("capproof-*.whl"))
    venv = base / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], cwd=base).returncode == 0
    pip = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], cwd=base)
    assert pip.returncode == 0, pip.stderr
    return venv


GLM = [
    "vllm",
    "serve",
    "zai-org/GLM-5.2",
    "-tp",
    "8",
    "-dcp",
    "2",
    "--max-model-len",
    "1M",
    "--block-size",
    "64",
    "--kv-cache-dtype",
    "fp8_ds_mla",
    "--speculative-config",
    '{"method": "mtp", "num_speculative_tokens": 5}',
]


def test_check_config_from_any_directory(installed, tmp_path):
    """An operator with only the wheel: the engine specs ship inside it."""
    exe = str(installed / "bin" / "capproof")
    failing = _run([exe, "check-config", "--engine", "vllm==0.27.0", "--", *GLM], cwd=tmp_path)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "W_buf=8192, W_bt=16384" in failing.stdout and "spec/vllm_dsa_indexer.py::" in failing.stdout
    fixed = _run([exe, "check-config", "--engine", "vllm==0.32.0", "--", *GLM], cwd=tmp_path)
    assert fixed.returncode == 0 and fixed.stdout.startswith("safe"), fixed.stdout + fixed.stderr
    version = _run([str(installed / "bin" / "python"), "-m", "capproof", "--version"], cwd=tmp_path)
    assert version.returncode == 0 and "0.1.0" in version.stdout


def test_a_teams_own_project_with_its_spec_and_models(installed, tmp_path):
    """A new repo with its own spec/ and models/ (and [tool.capproof] defaults), run from a subdirectory."""
    (tmp_path / "pyproject.toml").write_text("[tool.capproof]\nrlimit = 5000000\njobs = 1\n")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "ring.py").write_text(
        textwrap.dedent('''\
        from capproof.arith import cdiv


        def slots(requests, per_request):
            """Ring buffer slots: one page of 16 per started group of requests (our engine, v1)."""
            return cdiv(requests, 16) * 16 * per_request
    ''')
    )
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "ring.py").write_text(
        textwrap.dedent("""\
        from capproof import Choice, Range, at_most, obligation
        from models.ring import slots


        @obligation(domain={"requests": Range(1, 4096), "per_request": Choice(1, 2, 4)}, expect="proved")
        def ring_holds_every_request(requests, per_request):
            return at_most(demand=requests * per_request, capacity=slots(requests, per_request))


        @obligation(domain={"requests": Range(1, 4096)}, expect="counterexample")
        def fixed_ring_of_1024(requests):
            return at_most(demand=requests, capacity=1024)
    """)
    )
    (tmp_path / "src").mkdir()
    exe = str(installed / "bin" / "capproof")
    result = _run([exe, "prove", "--no-contracts"], cwd=tmp_path / "src")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "spec/ring.py:5: ok   proved         ring_holds_every_request" in result.stdout
    assert "2 of 2 as expected" in result.stdout
    assert (
        "spec/ring.py:10: ok   counterexample fixed_ring_of_1024" in result.stdout and "3072 of 4096" in result.stdout
    )
    # the team's pytest run proves them too (the plugin comes with the wheel: entry point pytest11)
    pip = _run([str(installed / "bin" / "python"), "-m", "pip", "install", "-q", "pytest"], cwd=tmp_path)
    assert pip.returncode == 0, pip.stderr
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ring.py").write_text("def test_ordinary():\n    assert True\n")
    tested = _run(
        [str(installed / "bin" / "python"), "-m", "pytest", "--capproof", "-v", "-p", "no:cacheprovider"], cwd=tmp_path
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "spec/ring.py::ring_holds_every_request PASSED" in tested.stdout
    assert "spec/ring.py::fixed_ring_of_1024 PASSED" in tested.stdout and "3 passed" in tested.stdout


def test_the_wheel_ships_the_reviewed_inventory(installed, tmp_path):
    """The committed inventory (proofs/inventory/vllm-0.33.0.json, the reviewed copy) is package
    data of the wheel, byte for byte, and the installed capproof finds it from any directory."""
    import glob

    (shipped,) = glob.glob(
        str(installed / "lib" / "python*" / "site-packages" / "capproof" / "_engine" / "inventory" / "vllm-0.33.0.json")
    )
    with open(shipped, "rb") as a, open(os.path.join(ROOT, "proofs", "inventory", "vllm-0.33.0.json"), "rb") as b:
        assert a.read() == b.read()
    found = _run(
        [
            str(installed / "bin" / "python"),
            "-c",
            "from capproof.inventory import load; print(len(load('proofs/inventory/vllm-0.33.0.json')))",
        ],
        cwd=tmp_path,
    )
    assert found.returncode == 0 and int(found.stdout) > 400, found.stdout + found.stderr


def test_every_module_of_the_installed_package_imports(installed, tmp_path):
    """A subpackage left out of the wheel fails only when a command imports it (capproof inventory)."""
    code = (
        "import importlib, pkgutil, capproof\n"
        "for m in pkgutil.walk_packages(capproof.__path__, 'capproof.'):\n"
        "    if not m.name.startswith('capproof._engine'):\n"
        "        importlib.import_module(m.name)\n"
    )
    done = _run([str(installed / "bin" / "python"), "-c", code], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    helped = _run([str(installed / "bin" / "capproof"), "inventory", "--help"], cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
