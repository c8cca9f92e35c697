"""The roles an API token or a user holds (light: the `tda` command line reads it before anything loads)."""

ROLES: tuple[str, ...] = ("admin", "viewer")
