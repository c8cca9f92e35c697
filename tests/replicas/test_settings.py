"""The scale-out settings: URLs users write as they find them in their providers' consoles are accepted; the
rest is refused with what to write instead."""

from __future__ import annotations

import pytest

from tda.cli import main
from tda.config import Settings


@pytest.mark.parametrize(
    ("given", "used"),
    [
        ("postgresql+asyncpg://u:p@db:5432/tda", "postgresql+asyncpg://u:p@db:5432/tda"),
        ("postgresql://u:p@db/tda", "postgresql+asyncpg://u:p@db/tda"),
        ("postgres://u:p@db/tda", "postgresql+asyncpg://u:p@db/tda"),
        ("sqlite:////srv/tda.db", "sqlite+aiosqlite:////srv/tda.db"),
    ],
)
def test_database_urls_pick_the_async_drivers_tda_ships(given: str, used: str) -> None:
    assert Settings.from_env({"TDA_DATABASE_URL": given}).sqlalchemy_url == used


def test_nothing_set_means_everything_embedded() -> None:
    settings = Settings.from_env({"TDA_DATA_DIR": "/srv/tda"})
    assert settings.sqlalchemy_url == "sqlite+aiosqlite:////srv/tda/tda.db"
    assert settings.bus_url is None and settings.chroma_url is None


@pytest.mark.parametrize(
    ("variable", "value", "advice"),
    [
        ("TDA_DATABASE_URL", "mysql://u@db/tda", "postgresql+asyncpg://"),
        ("TDA_DATABASE_URL", "postgresql+psycopg2://u@db/tda", "postgresql+asyncpg://"),
        ("TDA_BUS_URL", "http://redis:6379", "redis://"),
    ],
)
def test_unusable_urls_are_refused_with_what_to_write(
    variable: str, value: str, advice: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(variable, value)
    assert main(["db", "upgrade"]) == 2
    err = capsys.readouterr().err
    assert variable in err and advice in err and "Traceback" not in err
