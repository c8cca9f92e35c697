"""The wheel is the product: built from the sources, installed into a fresh venv with no source tree in
sight, `tda serve` (run from another folder) serves the UI pages and their static assets."""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.ops.live import ROOT, Live, cli, free_port, tda_env, token_in

SOURCES = ["pyproject.toml", "setup.py", "README.md", "tda", "components", "modules", "static", "templates"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built from a copy of the sources, so the checkout gets no build/ or egg-info."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(ROOT / name, src / name)
    cli(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(work), str(src)], {}
    )
    (built,) = work.glob("tda-*.whl")
    return built


def test_the_wheel_carries_the_ui(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, suffix in (("static", (".js", ".css")), ("templates", (".html",))):
        shipped = {p.relative_to(ROOT).as_posix() for p in (ROOT / folder).rglob("*") if p.suffix in suffix}
        assert shipped, f"nothing to ship in {folder}/"
        assert {f"tda/{name}" for name in shipped} <= names
    assert {"modules/system_prompt/manifest.json", "tda/migrations/versions/0001_initial_schema.py"} <= names
    # the built-in plugin, its shipped types (data) and a module's helper beside its handler
    plugin = {"modules/__init__.py", "modules/window_types/balanced.json", "modules/plan_hydration/distillation.py"}
    assert plugin <= names


def test_an_installed_wheel_serves_the_ui_from_another_folder(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # Install first, into the empty venv (pip sees nothing else there)...
    cli([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)], {})
    # ...then lend it this environment's third-party packages (torch & co. are not reinstalled for a test).
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], capture_output=True, text=True
    ).stdout.strip()
    (Path(site) / "_shared_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    data = tmp_path / "data"
    live_env = tda_env(data, free_port(), TDA_SECRET_KEY=secrets.token_urlsafe(32))
    env = {k: v for k, v in live_env.items() if k != "PYTHONPATH"}
    where = cli([str(python), "-c", "import tda, components, modules; print(tda.__file__)"], env, cwd=elsewhere)
    assert Path(where.strip()).is_relative_to(venv), f"tda imported from {where}, not from the wheel"

    token = token_in(cli([str(venv / "bin" / "tda"), "tokens", "create", "--role", "admin"], env, cwd=elsewhere))
    server = Live(env, tmp_path / "serve.log", command=[str(venv / "bin" / "tda"), "serve"], cwd=elsewhere)
    server.start()
    try:
        status, _, _ = server.call("POST", "/v1/auth/session", {"token": token})
        assert status == 200
        status, _, page = server.raw("GET", "/ui/types")
        assert status == 200, page[:500]
        html = page.decode()
        assert "<html" in html.lower()
        assets = sorted(set(re.findall(r'(/static/[^"\']+\.(?:js|css))', html)))
        assert assets, "the page links no static assets"
        for asset in assets:
            status, _, body = server.raw("GET", asset)
            assert status == 200 and body, asset
        status, _, body = server.raw("GET", "/static/ui/app.css")
        assert status == 200 and body == (ROOT / "static" / "ui" / "app.css").read_bytes()
        status, _, types = server.call("GET", "/v1/context-window-types", headers={"Authorization": f"Bearer {token}"})
        assert status == 200 and types["default"] == "balanced"
    finally:
        server.stop()
