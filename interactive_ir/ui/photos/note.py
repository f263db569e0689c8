"""The page's gallery line under the results: the credit of the index it serves, and while the photos are
being prepared, how far they are ("Preparing 2,880 photos (DOCCI, CC BY 4.0): 1,200 done").

The credit comes from the served index (`index.credit`), never from text here. The progress note is polled
by each tab (a `gr.Timer`, active only while the build runs). When the photos are ready the note says the
page reloads with them; the page's script (assets/ui/page.js) then asks `iir/served` which index this
server serves and reloads the tab once that is another one, as it does when the line itself names
another index (`data-index`: a late poll answered by the new page): no tab of the old page goes on
sending its events to the new one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from pathlib import Path

POLL_S = 5.0  # how often an open tab asks how far the photos are (while they are being prepared)
SERVED_ROUTE = "iir/served"  # answers the served index's folder name (relative to the page, as the image route)


@dataclass(frozen=True)
class PhotoNote:
    """What the page says about the photo demo: its config and where its index stands (read at each poll)."""

    cfg: object  # the PhotoDemoConfig (count, title, licence for the progress note)
    status: Callable  # () -> photos.build.PhotoStatus


def served_name(index) -> str:
    """The served index's folder name (no server path on the page)."""
    return Path(str(getattr(index, "path", "") or "")).name


def status_line(cfg, st) -> str:
    """The progress note in plain words, or "" when there is nothing to say (photos served, none wanted)."""
    if st is None or st.state == "serving":
        return ""
    what = f"{cfg.count:,} photos ({cfg.title}, {cfg.license})"
    if st.state == "ready":
        return "Photos are ready: this page reloads with them in a moment."
    if st.state == "failed":
        why = ("the photo collection could not be downloaded" if st.unreachable
               else "the photo collection could not be read")
        return (f"The {what} could not be prepared ({why}), so this gallery shows drawings. The app tries again "
                "when it restarts.")
    if st.phase == "embed" and st.total:
        how_far = f"{st.done:,} of {st.total:,} done"
    else:
        how_far = "downloading them"
    return f"Preparing {what}: {how_far}. This page switches to them when they are ready."


def credit_html(index) -> str:
    """The served index's credit line with its links, or "" when the index records none."""
    from interactive_ir.index.credit import credit_of

    credit = credit_of(getattr(index, "manifest", None))
    if credit is None:
        return ""

    def link(text: str, url: str) -> str:
        if not url.startswith(("https://", "http://")):
            return escape(text)
        return f'<a href="{escape(url)}" target="_blank" rel="noopener noreferrer">{escape(text)}</a>'

    cite = f" ({escape(credit.citation)})" if credit.citation else ""
    return (f'<p class="iir-credit">{escape(credit.kind)}: {link(credit.title, credit.url)}{cite}, '
            f"{link(credit.license, credit.license_url)}</p>")


def gallery_html(index, note: PhotoNote | None = None) -> str:
    """The line under the results: the progress note (when there is one) above the credit."""
    parts = []
    if note is not None:
        st = note.status()
        line = status_line(note.cfg, st)
        if line:
            parts.append(f'<p class="iir-photo-note" role="status" data-photos="{escape(st.state)}">'
                         f"{escape(line)}</p>")
    parts.append(credit_html(index))
    return f'<div class="iir-gallery" data-index="{escape(served_name(index))}">{"".join(parts)}</div>'


def building(note: PhotoNote | None) -> bool:
    return note is not None and note.status().state == "building"


def lay_out(engine, note: PhotoNote | None) -> dict:
    """The gallery line and, with a photo note, its timer (inside the page's `gr.Blocks`)."""
    import gradio as gr

    parts = {"gallery": gr.HTML(gallery_html(engine.index, note), elem_id="iir-gallery", padding=False)}
    if note is not None:  # also on the photo page (inactive): both pages wire the same events
        parts["gallery_timer"] = gr.Timer(POLL_S, active=building(note))
    return parts


def wire(demo, page, ctx, cheap: dict) -> None:
    """The note's updates: on load, and at each tick while the photos are being prepared."""
    import gradio as gr

    note = ctx.photo_note
    if note is None:
        return

    def refresh():
        return gallery_html(ctx.engine.index, note), gr.Timer(active=building(note))

    outputs = [page.gallery, page.gallery_timer]
    demo.load(refresh, None, outputs, api_name=False, **cheap)
    page.gallery_timer.tick(refresh, None, outputs, api_name=False, **cheap)


def served_route(index) -> object:
    """`GET iir/served`: the served index's folder name, never cached (the page's reload check)."""
    from fastapi.responses import PlainTextResponse
    from fastapi.routing import APIRoute

    name = served_name(index)

    def served():
        return PlainTextResponse(name, headers={"Cache-Control": "no-store"})

    return APIRoute(f"/{SERVED_ROUTE}", served, methods=["GET"], include_in_schema=False)
