"""Recall in the service: the component's indexes (``components/context_window/recall``) kept up to date as turns are
recorded (``messages``, ``turns``), with the vectors of recalled parts in the knowledge store (``vectors``)."""
