"""From the clipart to the photos without a restart: `PhotoSwitch.run`.

The clipart page serves while the photo index is built in the background (`assembly.photo_build.PhotoBuild`). When it is
ready, a new page is built over it with the same models (nothing is loaded again), the open tabs are told
("Photos are ready: this page reloads with them in a moment", polled by each tab), and after a grace period
longer than a poll the clipart page is closed (Gradio's public `Blocks.close()`) and the photo page is
launched on the same port in the same process. The tabs' script then reloads them onto the photo page
(`note.py`, assets/ui/page.js). A failed build changes nothing: the clipart serves, its note says so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from interactive_ir.assembly.photo_build import PhotoBuild, PhotoStatus
from interactive_ir.ui.photos.note import POLL_S, PhotoNote

log = logging.getLogger(__name__)

LAUNCH_TRIES = 5  # the port may take a moment to be free after the clipart page closes
GALLERY_NOTES = ("demo gallery:", "photo gallery:")  # the notes about the served collection (replaced at the switch)


def serving() -> PhotoStatus:
    """The photo page's status: its photos are served (its note shows the credit only)."""
    return PhotoStatus("serving")


@dataclass
class PhotoSwitch:
    """The background build and how to make the photo page once it is done."""

    build: PhotoBuild
    page_over: Callable  # (photo index folder) -> (page, engine): the photo page, same models, same layout
    grace_s: float = POLL_S + 2.0  # from "ready" to the switch: every open tab's poll sees the note first

    def note(self) -> PhotoNote:
        """The clipart page's note: the build's progress, read at each poll."""
        return PhotoNote(self.build.cfg, self.build.status)

    def run(self, demo, launch: Callable[[object, object], None], poll_s: float = 0.5):
        """Start the build, keep serving `demo` (launched) until the photos are ready, then switch to the photo
        page (`launch(page, engine)` serves it). Returns the page serving at the end: `demo` when the build
        failed or the server was stopped, else the photo page."""
        self.build.start()
        try:
            while demo.is_running and not self.build.finished.wait(poll_s):
                pass
            if not demo.is_running or not self.build.ready:
                return demo
            return self._switch(demo, launch)
        except KeyboardInterrupt:  # stopped while building: the child stops too
            self.build.stop()
            demo.close()
            return demo

    def _switch(self, demo, launch):
        t0 = time.perf_counter()
        try:
            page, engine = self.page_over(self.build.out)
        except Exception as e:  # noqa: BLE001 - whatever it is, the clipart keeps serving and the log says why
            first = (str(e).strip().splitlines() or [e.__class__.__name__])[0][:300]
            self.build.fail(f"the photo page could not be built ({first})")
            return demo
        wait = self.grace_s - (time.perf_counter() - t0)  # the tabs were told when the build became ready
        if wait > 0:
            time.sleep(wait)
        demo.close()
        _launch_retrying(launch, page, engine)
        log.info("photo demo: the page now serves the photos (%s)", Path(self.build.out).name)
        return page


def _launch_retrying(launch, page, engine) -> None:
    for n in range(LAUNCH_TRIES):
        try:
            launch(page, engine)
            return
        except OSError:  # the port is not free yet
            if n == LAUNCH_TRIES - 1:
                raise
            time.sleep(1.0)


def page_maker(parts, make_page: Callable) -> Callable:
    """`page_over(folder)` for `PhotoSwitch`: the photo index opened with the clipart's embedder
    (`assembly.photo_index.serve_photos`), an engine over it with the same models (`AppParts.engine_over`), and
    `make_page(engine, notes, photo_note)`, the same page as the clipart's with its note saying the photos are
    served."""
    def page_over(folder: Path):
        from interactive_ir.assembly.photo_index import serve_photos
        from interactive_ir.errors import IndexLoadError

        build: PhotoBuild = parts.photos
        served = serve_photos(build.cfg, folder, parts.engine.retriever.embedder)
        if served is None:
            raise IndexLoadError(f"the photo index {Path(folder).name} does not open")
        engine = parts.engine_over(served.retriever.warm())
        notes = served.notes + [n for n in parts.notes if not n.startswith(GALLERY_NOTES)]
        return make_page(engine, notes, PhotoNote(build.cfg, serving)), engine

    return page_over
