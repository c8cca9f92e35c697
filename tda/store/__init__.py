"""Data access: the only place that writes SQL. Every write method is one transaction."""

from __future__ import annotations

from ..db import Database
from .audit import AuditStore
from .calibrations import CalibrationStore
from .components import ComponentInstructionStore
from .experiments import ExperimentStore
from .modules import ModuleStateStore
from .profiles import ProfileStore
from .projects import ProjectStore
from .sessions import SessionStore
from .tokens import TokenStore
from .types import StoredType, TypeStore, etag_for
from .vectors import HistoryVectorStore

__all__ = ["Store", "StoredType", "etag_for"]


class Store:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.types = TypeStore(db)
        self.projects = ProjectStore(db)
        self.profiles = ProfileStore(db)
        self.sessions = SessionStore(db)
        self.tokens = TokenStore(db)
        self.modules = ModuleStateStore(db)
        self.audit = AuditStore(db)
        self.components = ComponentInstructionStore(db)
        self.calibrations = CalibrationStore(db)
        self.experiments = ExperimentStore(db)
        self.history_vectors = HistoryVectorStore(db)

    @classmethod
    def connect(cls, url: str) -> Store:
        return cls(Database(url))

    async def close(self) -> None:
        await self.db.close()
