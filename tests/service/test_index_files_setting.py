"""``TDA_INDEX_FILES_DIR``: a service keeps its indexes' large buffers in files there (``mapped.keep_in_files``;
docs/operations.md), and in anonymous memory without it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from components.context_window import mapped
from components.context_window.relevance import GrowingArray
from tda.app import create_app
from tda.config import Settings
from tests.test_index_files import _is_anonymous_mapping, _is_file_pages


def test_the_setting_is_read_from_its_variable(tmp_path: Path):
    assert Settings.from_env({"TDA_INDEX_FILES_DIR": str(tmp_path)}).index_files_dir == tmp_path
    assert Settings.from_env({}).index_files_dir is None


async def test_a_service_keeps_its_indexes_in_the_folder_named_else_anonymous(settings: Settings, tmp_path: Path):
    folder = tmp_path / "index-files"
    options = {"migrate": False, "warm_up_llm": False, "warm_up_knowledge": False, "heartbeat_s": 0.2}
    try:
        async with create_app(dataclasses.replace(settings, index_files_dir=folder), **options).test_app():
            column = GrowingArray(np.int64, range(mapped.MAPPED_FROM))
            assert _is_file_pages(column.view) and folder.is_dir() and list(folder.iterdir()) == []
        async with create_app(settings, **options).test_app():
            assert _is_anonymous_mapping(GrowingArray(np.int64, range(mapped.MAPPED_FROM)).view)
    finally:
        mapped.keep_in_files(None)
