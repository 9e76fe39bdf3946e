"""Rendering of results: human text (text.py) and JSON (json.py); no computing here."""
