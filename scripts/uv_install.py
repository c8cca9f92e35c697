"""Installs into the venv whose python runs this, with uv, from the sources pip would use on this machine.

uv installs the pinned set many times faster than pip (it downloads and unpacks in parallel), but it reads neither
pip.conf nor PIP_* variables: pip's own option parser reads them here (index, extra indexes, find-links,
constraints, trusted hosts, certificate bundle, timeout) and they are handed to uv. Like pip, uv then picks the best
match across all of them (pip merges its indexes; uv's default would stop at the first index that has a package).

Usage (the Makefile): .venv/bin/python scripts/uv_install.py -e '.[test]'
"""

from __future__ import annotations

import os
import sys
from typing import Any


def pip_options() -> Any:
    """pip install's options with nothing on its command line: pip.conf files and PIP_* variables applied."""
    from pip._internal.commands import create_command

    options, _ = create_command("install").parse_args([])
    return options


def uv_arguments(options: Any) -> list[str]:
    """uv pip install's flags for the package sources in pip's ``options``."""
    args = ["--index-strategy", "unsafe-best-match"]
    if options.no_index:
        args.append("--no-index")
    elif options.index_url:
        args += ["--index-url", options.index_url]
    for flag, values in (
        ("--extra-index-url", options.extra_index_urls),
        ("--find-links", options.find_links),
        ("--constraint", options.constraints),
        ("--allow-insecure-host", options.trusted_hosts),
    ):
        for value in values or []:
            args += [flag, value]
    return args


def uv_environment(options: Any) -> dict[str, str]:
    env = dict(os.environ)
    if options.cert:
        env["SSL_CERT_FILE"] = options.cert
    if options.timeout:
        env["UV_HTTP_TIMEOUT"] = str(int(options.timeout))
    return env


def main(packages: list[str]) -> None:
    from uv import find_uv_bin

    options = pip_options()
    # No --compile-bytecode: compiling all 27,500 files took 200-350 s on two cores (the rest of the install ~20 s);
    # the Makefile has Python write the .pyc of what is imported instead (PYTHONPYCACHEPREFIX)
    command = [find_uv_bin(), "pip", "install", "--quiet", "--python", sys.executable]
    command += uv_arguments(options)
    os.execve(command[0], [*command, *packages], uv_environment(options))


if __name__ == "__main__":
    main(sys.argv[1:])
