"""A helper beside the handler: imported relatively, as any package's module."""

GREETING = "from the helper file"
