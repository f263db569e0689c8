"""Loaders for the papers' benchmark files, downloaded by the user (see each module)."""
