"""The roles an API token or a user holds (light: the `tda` command line reads it before anything loads).

``client``: an agent, which only chats (the OpenAI and Anthropic routes) in its project; ``viewer`` reads and
streams its project; ``admin`` also changes it; ``operator`` manages projects and tokens, and is in none (it sees
every project)."""

ROLES: tuple[str, ...] = ("client", "viewer", "admin", "operator")
