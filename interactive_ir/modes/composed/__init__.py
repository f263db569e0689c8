"""Composed search: a reference image and a relative caption ("like this, but at night"), ImageScope."""
