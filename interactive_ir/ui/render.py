"""HTML and Markdown for the page: result cards, the strip of earlier rounds, the dialogue, the reference.

Pure functions of the engine (read only) and a `UIState`; every user-supplied or indexed string is escaped.
"""

from __future__ import annotations

from html import escape

from interactive_ir.session import Session, Turn
from interactive_ir.ui.handlers import modes
from interactive_ir.ui.media import image_url, upload_url
from interactive_ir.ui.state import UIState

ACTIONS = {  # data-action -> (label, tooltip)
    "relevant": ("✓ Relevant", "Mark as relevant (click again to unmark)"),
    "irrelevant": ("✗ Not relevant", "Mark as not relevant (click again to unmark)"),
    "reference": ("Use as reference", "Describe how your image differs from this one"),
    "found": ("I found it", "This is the image I was looking for: end the search"),
}


def esc(text) -> str:
    """HTML-escaped text, with template braces neutralised (gr.HTML templates read `${` and `{{`)."""
    return escape(str(text), quote=True).replace("{", "&#123;").replace("}", "&#125;").replace("$", "&#36;")


def _alt(caption: str, image_id: str) -> str:
    return caption or f"image {image_id}"


def _img(url: str, alt: str, cls: str = "") -> str:
    if not url:
        return f'<div class="iir-noimg {cls}" role="img" aria-label="{esc(alt)}">{esc(alt)}</div>'
    return f'<img class="{cls}" src="{esc(url)}" alt="{esc(alt)}" loading="lazy" decoding="async">'


def _button(action: str, image_id: str, pressed: bool | None = None, disabled: bool = False) -> str:
    label, tip = ACTIONS[action]
    aria = "" if pressed is None else f' aria-pressed="{"true" if pressed else "false"}"'
    dis = " disabled" if disabled else ""
    return (f'<button type="button" class="iir-btn iir-{action}" data-action="{action}" data-id="{esc(image_id)}"'
            f' title="{esc(tip)}"{aria}{dis}>{label}</button>')


def _why(reasons: list[str]) -> str:
    if not reasons:
        return ""
    items = "".join(f"<li>{esc(r)}</li>" for r in reasons)
    return (f'<details class="iir-why"><summary>Why it ranks here ({len(reasons)})</summary>'
            f"<ul>{items}</ul></details>")


def results_html(engine, st: UIState) -> str:
    """The current page of results as cards with their actions."""
    if not st.started:
        return ('<div class="iir-empty">Describe the image you have in mind and press Enter; '
                "or upload a reference image and say how yours differs.</div>")
    s = st.session
    turn = s.last
    hits = engine.hits_of(turn)
    if not hits:
        return '<div class="iir-empty">No more images to show: every image was shown already. Start a new search.</div>'
    found_id = s.found.get("id") if s.found else ""
    ended = s.ended
    cards = []
    for rank, h in enumerate(hits, 1):
        mark = st.marks.get(h.id)
        cls = ["iir-card"]
        if mark is True:
            cls.append("is-rel")
        elif mark is False:
            cls.append("is-irr")
        if st.reference == h.id:
            cls.append("is-ref")
        if found_id == h.id:
            cls.append("is-found")
        url = image_url(engine.index, h.id)
        full = image_url(engine.index, h.id, full=True) if url else ""
        pic = _img(url, _alt(h.caption, h.id))
        if full:
            pic = f'<a href="{esc(full)}" target="_blank" rel="noopener" title="Open full size">{pic}</a>'
        if ended:
            actions = '<div class="iir-found-badge">✓ Found: your image</div>' if found_id == h.id else ""
        else:
            actions = ('<div class="iir-actions">'
                       + _button("relevant", h.id, mark is True) + _button("irrelevant", h.id, mark is False)
                       + _button("reference", h.id, st.reference == h.id) + _button("found", h.id)
                       + "</div>")
        cards.append(
            f'<article class="{" ".join(cls)}" data-id="{esc(h.id)}" data-rank="{rank}">'
            f'<div class="iir-pic"><span class="iir-rank">#{rank}</span>{pic}</div>'
            f'<p class="iir-cap">{esc(h.caption or h.id)}</p>'
            f"{_why(turn.why.get(h.id, []))}{actions}</article>")
    head = f'<div class="iir-page-head">Round {turn.round + 1}: {len(hits)} results</div>'
    ask = ""  # on a phone the dialogue panel sits below the results: say the question above them too
    if s.pending_question and not ended:
        ask = (f'<div class="iir-ask-narrow">System asks: <b>{esc(s.pending_question)}</b> '
               '<a href="#iir-answer">Answer below ↓</a></div>')
    return f'{head}{ask}<div class="iir-grid" role="list" aria-label="results">{"".join(cards)}</div>'


def _turn_label(t: Turn) -> str:
    kind = {
        "describe": f"described “{t.user_text}”",
        "answer": f"answered “{t.user_text}”",
        "skip": "skipped the question",
        "feedback": f"marked {len(t.relevant)} relevant, {len(t.irrelevant)} not relevant",
        "relative": f"“{t.user_text}” relative to " + ("an uploaded image" if t.reference_upload else
                                                        (t.reference or "the top result")),
        "search": f"searched “{t.user_text}”",
    }.get(t.kind, t.kind)
    return f"Round {t.round + 1}: {kind}"


def strip_html(engine, st: UIState) -> str:
    """Earlier rounds (all but the current one), oldest first, as rows of small thumbnails."""
    if not st.started or len(st.session.turns) < 2:
        return '<div class="iir-strip-empty">Earlier rounds appear here.</div>'
    s = st.session
    rel, irr = (set(x) for x in s.marked())
    found_id = s.found.get("id") if s.found else ""
    rows = []
    for t in s.turns[:-1]:
        thumbs = []
        for h in engine.hits_of(t):
            cls = "iir-thumb" + (" is-rel" if h.id in rel else " is-irr" if h.id in irr else "") + (
                " is-found" if h.id == found_id else "")
            pick = ("" if s.ended else  # a result passed over earlier can still be the one
                    f'<button type="button" class="iir-thumb-found" data-action="found" data-id="{esc(h.id)}" '
                    f'title="I found it: this is my image" aria-label="I found it: {esc(h.caption or h.id)}">'
                    "Found</button>")
            thumbs.append(f'<figure class="{cls}" title="{esc(h.caption or h.id)}">'
                          f'{_img(image_url(engine.index, h.id), _alt(h.caption, h.id))}{pick}</figure>')
        rows.append(f'<section class="iir-round"><h4>{esc(_turn_label(t))}</h4>'
                    f'<div class="iir-thumbs">{"".join(thumbs)}</div></section>')
    tip = "" if s.ended else '<p class="iir-strip-tip">Passed over your image? Press <b>Found</b> under it.</p>'
    return f'<div class="iir-strip" aria-label="earlier rounds">{tip}{"".join(rows)}</div>'


def dialogue_html(st: UIState, questions_on: bool, questions_off_reason: str = "") -> str:
    """The conversation so far and the question waiting for an answer."""
    lines = []
    s: Session | None = st.session
    for t in (s.turns if s else []):
        if t.kind == "describe":
            lines.append(("you", t.user_text))
        elif t.kind == "answer":
            lines.append(("you", t.user_text))
        elif t.kind == "skip":
            lines.append(("note", "(question skipped)"))
        elif t.kind == "feedback":
            lines.append(("note", f"(you marked {len(t.relevant)} relevant, {len(t.irrelevant)} not relevant)"))
        elif t.kind == "relative":
            lines.append(("you", f"{t.user_text}  (relative to a reference image)"))
        elif t.user_text:
            lines.append(("you", t.user_text))
        if t.error:
            lines.append(("error", t.error))
        if t.question and t is not (s.last if s else None):
            lines.append(("system", t.question))
    out = []
    for who, text in lines:
        role = {"you": "You", "system": "System", "note": "", "error": "Note"}[who]
        label = f'<b class="iir-who">{role}:</b> ' if role else ""
        out.append(f'<div class="iir-msg iir-{who}">{label}{esc(text)}</div>')
    pending = s.pending_question if s else ""
    if (st.asking or st.question_due) and s and s.turns and not s.ended:
        out.append('<div class="iir-msg iir-note" role="status">The system is writing a question about these '
                   "results…</div>")
    elif pending and not (s and s.ended):
        fb = s.last.question_fallback if s.last else False
        note = ('<div class="iir-qnote">A question built from these results (the LLM gave none that helps).</div>'
                if fb else "")
        out.append(f'<div class="iir-question" role="status"><b class="iir-who">System asks:</b> '
                   f"{esc(pending)}{note}</div>")
    elif not questions_on:
        out.append(f'<div class="iir-qoff" role="note">{esc(questions_off_reason or "Questions are off.")}</div>')
    elif not s or not s.turns:
        out.append('<div class="iir-msg iir-note">The system will ask questions about your image here.</div>')
    return f'<div class="iir-dialogue" aria-label="dialogue">{"".join(out)}</div>'


def reference_html(engine, st: UIState) -> str:
    """What a relative caption will be compared against."""
    if st.upload:
        return (f'<div class="iir-ref">{_img(upload_url(st.upload), "your uploaded reference image", "iir-ref-img")}'
                "<span>Reference: <b>your uploaded image</b></span></div>")
    if st.reference:
        row = engine.index.row_of.get(st.reference)
        cap = engine.index.records[row].caption if row is not None else ""
        url = image_url(engine.index, st.reference)
        return (f'<div class="iir-ref">{_img(url, _alt(cap, st.reference), "iir-ref-img")}'
                f"<span>Reference: <b>{esc(cap or st.reference)}</b></span></div>")
    upload = modes(engine).upload
    if st.started:
        return ('<div class="iir-ref iir-ref-none">Reference: the top result of the last round. '
                f"Pick another with “Use as reference”{', or upload one' if upload else ''}.</div>")
    if upload:
        return '<div class="iir-ref iir-ref-none">Upload a reference image, or start with a description.</div>'
    return ('<div class="iir-ref iir-ref-none">Start with a description, then pick a result with “Use as '
            "reference” and say how your image differs from it.</div>")


def status_md(st: UIState) -> str:
    """One line: where the search stands and what to do next."""
    notice = f"{st.notice}  \n" if st.notice else ""
    if not st.session or not st.session.turns:
        return notice + "Start by describing the image you are looking for."
    s = st.session
    if s.found:
        f = s.found
        return (notice + f"✓ **Found** `{f['id']}` in round {f['round'] + 1} at rank {f['rank']}. "
                "Press **New search** to look for another image.")
    rel, irr = st.marked()
    marks = (f" · marked {len(rel)} relevant, {len(irr)} not relevant: press **More like my marks**"
             if rel or irr else (" · answer the question, mark results, or use one as a reference" if s.pending_question
                                 else " · mark results, or use one as a reference"))
    asking = " · the LLM is writing a question about these results…" if st.asking or st.question_due else ""
    return notice + f"Round {s.last.round + 1} · {len(s.last.shown)} results{marks}{asking}"
