"""The photo demo: where the Hub is reachable (a Space), the default gallery is a few thousand captioned photos
of a Hub dataset (DOCCI's Parquet mirror, CC BY 4.0), credited on the page; the bundled clipart stays the
offline gallery.

`config.py` (the settings and when it is on), `start.py` (at start-up), `gallery.py` (a photo index built
before, served at once), `build.py` (the background build in a child process, `child.py`), `note.py` (the
credit line and the progress note on the page), `switch.py` (from the clipart page to the photo page on the
same port, models shared).
"""
