"""tda: the application around the context-window component (CLI, service, storage, UI)."""
