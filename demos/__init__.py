"""Runnable lessons.  `python -m demos` runs the tour; `python -m demos NAME` one lesson."""
