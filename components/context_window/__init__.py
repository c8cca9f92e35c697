"""tda's context-window component: a pure library (no web, database or vector-store imports)."""
