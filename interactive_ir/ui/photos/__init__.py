"""The photo demo's page parts: where the Hub is reachable (a Space), the default gallery is a few thousand
captioned photos of a Hub dataset (DOCCI's Parquet mirror, CC BY 4.0), credited on the page; the bundled clipart
stays the offline gallery.

`note.py` (the credit line and the progress note on the page), `switch.py` (from the clipart page to the photo
page on the same port, models shared), `child.py` (the background build's process entry, with the app's log
settings). Choosing, opening and building the photo index is the assembly's: `assembly.photo_config` (the
settings and when it is on), `assembly.photo_index` (at start-up: served when built before, else the folder to
build), `assembly.photo_build` (the background build in a child process, `assembly.photo_child`).
"""
