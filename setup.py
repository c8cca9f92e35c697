"""Packaging beyond pyproject.toml: static/ and templates/ are top-level folders of the repository, but they ship
inside the wheel as tda/static and tda/templates, so an installed tda has its UI (tda.assets finds either)."""

from setuptools import find_namespace_packages, setup

ASSETS = {"tda.static": "static", "tda.templates": "templates"}

setup(
    packages=[
        *find_namespace_packages(include=["tda*", "components*", "modules*"], exclude=["*.__pycache__"]),
        *ASSETS,
    ],
    package_dir=ASSETS,
    package_data={"": ["*.json", "*.md", "*.mako", "*.ini"], **{package: ["**/*"] for package in ASSETS}},
)
