"""Tool results in the window: the shapes a turn records them in (``shapes``), and old results cleared to short
references, recalled when a question needs them (``clearing``)."""
