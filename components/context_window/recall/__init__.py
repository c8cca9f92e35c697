"""Recall: bringing back by relevance what fell out of the window (``messages``: a session's older messages;
``turns``: earlier turns' results and lines). Pure modules over the relevance engine (``../relevance.py``)."""
