"""The photo index's build process, as the app starts it (`assembly.photo_build.PhotoBuild`, at low priority):

    python -m interactive_ir.ui.photos.child --out DIR --embedder SPEC --dataset USER/NAME --limit N ...

The app's log settings (`ui.serving.logs`) around the build itself (`assembly.photo_child`: its arguments, its
progress lines on stdout, the index).
"""

from __future__ import annotations

import sys

from interactive_ir.assembly.photo_child import main
from interactive_ir.ui.serving.logs import setup_logging

if __name__ == "__main__":
    sys.exit(main(setup_logging=setup_logging))
