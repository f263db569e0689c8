"""HTML and Markdown for the page: result cards, the strip of earlier rounds, the dialogue, the reference.

Pure functions of the engine (read only) and a `UIState`; every user-supplied or indexed string is escaped.
"""

from __future__ import annotations

import re
from html import escape

from interactive_ir.backends.redact import public_text
from interactive_ir.core.session import Session, Turn
from interactive_ir.ui import filter_view
from interactive_ir.ui.captions import plain_caption
from interactive_ir.ui.handlers import modes
from interactive_ir.ui.serving.media import image_url, upload_url
from interactive_ir.ui.state import UIState

ACTIONS = {  # data-action -> (label, tooltip)
    "relevant": ("Relevant", "Mark as relevant (click again to unmark)"),
    "irrelevant": ("Not it", "Mark as not what you look for (click again to unmark)"),
    "reference": ("Use as reference", "Describe how your image differs from this one"),
    "found": ("Found it", "This is the image I was looking for: end the search"),
    "like": ("Closest", "Closest to the image I have in mind: the next page is ranked by it (filters stay)"),
}
CARD_CHARS = 90  # a result card's caption is cut (at a word) beyond this; its full text is its tooltip
OPTION_CHARS = 40  # the same for a picture option's label
# why the page offers no upload (a caption index and no captioner: `handlers.modes`), in plain words
NO_UPLOAD = ("You cannot upload a photo of your own here: this demo finds pictures by their descriptions, and "
             "it has no model that could describe a new photo.")
KEYS = (("← → ↑ ↓ or j / k", "move between results"), ("Enter", "larger view"), ("Esc", "close it"),
        ("r / n", "mark relevant / not it"), ("f", "found it"), ("x", "select / unselect (to download)"),
        ("?", "show or hide these keys"))
EXAMPLES = ("a puppy sitting on the grass", "a man riding a horse", "a slice of birthday cake",
            "a small house with a chimney")  # the empty page's example descriptions (demo gallery)


def esc(text) -> str:
    """HTML-escaped text, with template braces neutralised (gr.HTML templates read `${` and `{{`)."""
    return escape(str(text), quote=True).replace("{", "&#123;").replace("}", "&#125;").replace("$", "&#36;")


_PATH = r"(?<![\w.:/])(?:[A-Za-z]:)?[/\\](?:[^\s/\\'\"()<>,;]+[/\\])+[^\s/\\'\"()<>,;]*"
_IMAGE_AT_PATH = re.compile(r"\b([Ii]mage|[Ff]ile)\s+'?(" + _PATH + r")'?")
_A_PATH = re.compile(_PATH)


def no_paths(text: str) -> str:
    """`text` (an error for the page) without the server's file paths: "image /x/uploads/u2c.jpg" becomes
    "the uploaded image", any other path "a file on the server"."""
    def what(path: str) -> str:
        return "the uploaded image" if "/uploads/" in path.replace("\\", "/") else "a file on the server"

    text = _IMAGE_AT_PATH.sub(lambda m: what(m.group(2)), text)
    return _A_PATH.sub(lambda m: what(m.group(0)), text)


def _alt(caption: str, image_id: str) -> str:
    return plain_caption(caption) or f"image {image_id}"


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


def empty_html(examples=EXAMPLES, upload: bool = False) -> str:
    """The page before a search: what to do, and example descriptions that run a search when clicked."""
    chips = "".join(f'<button type="button" class="iir-example" data-example="{esc(x)}">{esc(x)}</button>'
                    for x in examples)
    how = "Describe the image you have in mind and press Enter" + (
        "; or upload a reference image and say how yours differs." if upload else ".")
    tips = f'<div class="iir-examples" role="group" aria-label="example searches">Try: {chips}</div>' if chips else ""
    return f'<div class="iir-empty"><p>{how}</p>{tips}</div>'


def _seen_ids(turn: Turn, hits) -> set[str]:
    return set(getattr(turn, "seen", None) or []) | {h.id for h in hits if getattr(h, "seen", False)}


def results_html(engine, st: UIState, examples=EXAMPLES) -> str:
    """The current page of results as cards with their actions; a click on a picture opens the large view."""
    if not st.started:
        return empty_html(examples, modes(engine).upload)
    s = st.session
    turn = s.last
    hits = engine.hits_of(turn)
    if not hits:
        return '<div class="iir-empty">No more images to show: every image was shown already. Start a new search.</div>'
    found_id = s.found.get("id") if s.found else ""
    ended = s.ended
    seen = _seen_ids(turn, hits)
    learn = set(turn.extra.get("learn") or ())  # shown by the belief to learn from, not for their probability
    picked = {i: why for t in s.turns for i, why in _pins_of(t)}  # the latest reason for each
    folded = fold_of(engine, turn)
    cards = []
    ranks = {h.id: n for n, h in enumerate(hits, 1)}  # the rank by score, kept when the order is by date
    if st.sort:
        hits = filter_view.by_date(hits, engine.dates_of([h.id for h in hits]), st.sort)
    elif len(s.turns) > 1:
        hits = keep_positions(s.turns[-2].shown, hits)
    for h in hits:
        rank = ranks[h.id]
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
        if h.id in seen:
            cls.append("is-seen")
        cap = plain_caption(h.caption) or h.id  # in plain words, not the index's metadata
        url = image_url(engine.index, h.id)
        full = image_url(engine.index, h.id, full=True) if url else ""
        pic = _img(url, _alt(h.caption, h.id))
        if url:  # the picture opens the large view (lightbox) with the caption, previous/next and the actions
            pic = (f'<button type="button" class="iir-open" data-action="open" data-id="{esc(h.id)}" '
                   f'data-src="{esc(full or url)}" title="Larger view" aria-label="Larger view: {esc(cap)}">{pic}</button>')
        badges = f'<span class="iir-rank">#{rank}</span>' + _select_button(h.id, cap)
        if h.id in picked:  # liked, chosen or referred to before, and on this page anyway: it says which
            label, title = PIN_LABELS[picked[h.id]]
            badges += f'<span class="iir-seen iir-picked" title="{esc(title)}">{esc(label)}</span>'
        elif h.id in seen:
            badges += '<span class="iir-seen" title="Shown in an earlier round of this search">Seen</span>'
        if h.id in learn:  # the belief showed it to learn which kind of image you mean (`BeliefConfig.explore`)
            badges += ('<span class="iir-seen iir-learn" title="Not among the likeliest: shown so that your answer '
                       'tells which kind of image you mean">To learn</span>')
        if ended:
            actions = '<div class="iir-found-badge">✓ Found: your image</div>' if found_id == h.id else ""
        else:
            actions = ('<div class="iir-actions">'
                       + _button("relevant", h.id, mark is True) + _button("irrelevant", h.id, mark is False)
                       + _button("reference", h.id, st.reference == h.id) + _button("found", h.id)
                       + "</div>")
            badges += _button("like", h.id)  # over the picture's corner: the card keeps its height
        head, more = folded.get(h.id, ("", 0))
        fold_attr = ""
        if head:  # a near-duplicate of a better ranked result: hidden until that card's "+N similar" opens it
            cls.append("is-folded")
            fold_attr = f' data-fold="{esc(head)}" hidden'
        elif more:
            badges += (f'<button type="button" class="iir-more-similar" data-action="unfold" data-id="{esc(h.id)}" '
                       f'aria-expanded="false" title="Show the {more} nearly identical results folded under this one">'
                       f"+{more} similar</button>")
        cards.append(
            f'<article class="{" ".join(cls)}" data-id="{esc(h.id)}" data-rank="{rank}" role="listitem"{fold_attr}>'
            f'<div class="iir-pic">{badges}{pic}</div>'
            f'<p class="iir-cap" title="{esc(cap)}">{esc(plain_caption(h.caption, CARD_CHARS) or h.id)}</p>'
            f"{_why(turn.why.get(h.id, []))}{actions}</article>")
    liked = "".join(_liked_card(engine, i, why) for i, why in pinned_ids(st)) if not ended else ""
    head, ask = _page_head(engine, st, hits, seen, bool(liked))
    return (f'{head}{selection_bar_html()}{ask}<div class="iir-grid" role="list" aria-label="results">'
            f'{liked}{"".join(cards)}</div>')


def keep_positions(before: list[str], hits: list) -> list:
    """Rank-preserving order (Jäckl, Peška, Lokoč et al. 2025): a result that was on the page before keeps the
    position it had there (within this page's length); the new ones fill the free positions in rank order. The
    card's #rank badge stays its rank by probability or score."""
    by_id = {h.id: h for h in hits}
    slots = [by_id.get(i) for i in before[:len(hits)]] + [None] * max(0, len(hits) - len(before))
    placed = {h.id for h in slots if h is not None}
    rest = iter([h for h in hits if h.id not in placed])
    return [h if h is not None else next(rest) for h in slots]


def _page_head(engine, st: UIState, hits, seen: set[str], liked: bool) -> tuple[str, str]:
    """(the line over the results: round, count, the model's badge, seen, shortcuts, filters, "no close match";
    the question repeated for a phone, "" when none is pending)."""
    s, ended = st.session, st.session.ended
    turn = s.last
    badge = ""
    if st.refined:
        badge = (' <span class="iir-badge iir-refined" title="The language model rewrote your words: these results replace the '
                 'first ones">Refined</span>')
    elif st.offer is not None:  # held while the person acts on these results: shown on request
        badge = (' <button type="button" class="iir-badge iir-offer" data-action="refined" title="The LLM rewrote '
                 'the query: show its results in place of these (your marks stay on images still shown)">'
                 "Refined results ready: show</button>")
    elif "refine" in st.todo or st.working == "refine":
        badge = (' <span class="iir-badge iir-quick" title="Results of your words as typed; the language model is refining them">'
                 "Quick results, refining…</span>")
    n_seen = sum(1 for h in hits if h.id in seen)
    seen_note = f' <span class="iir-seen-note">{n_seen} seen before</span>' if n_seen else ""
    pins = pinned_ids(st) if liked else []
    n_liked = len(pins)
    kept = f", with {_the_liked(n_liked, all(w == 'liked' for _, w in pins))} first" if n_liked else ""
    head = (f'<div class="iir-page-head" data-round="{turn.round + 1}" data-epoch="{st.epoch}">'
            f"Round {turn.round + 1}: {len(hits)} {'new ' if n_liked and not n_seen else ''}results{kept}{badge}{seen_note}"
            f"{keys_html() if not ended else ''}</div>")
    ask = ""  # on a phone the dialogue bar is stuck to the bottom: the question is said there too
    q = s.question if not ended else None
    if q is not None:
        ask = (f'<div class="iir-ask-narrow">System asks: <b>{esc(q.text)}</b> '
               '<a href="#iir-dialogue-panel">Answer ↓</a></div>')
    head += filter_view.summary_html(engine, st) + no_match_html(engine, s)
    return head, ask


def _select_button(image_id: str, cap: str) -> str:
    """A card's selection toggle (cards.js keeps the selection; shift-click selects a range)."""
    return (f'<button type="button" class="iir-select" data-select="{esc(image_id)}" aria-pressed="false" '
            f'aria-label="Select: {esc(cap)}" title="Select (shift-click: all from the last one)"></button>')


def selection_bar_html() -> str:
    """The selection's actions over the results; cards.js shows the count and enables them once one is chosen."""
    def b(what: str, label: str, disabled: bool = True) -> str:
        return (f'<button type="button" class="iir-selbtn" data-selbar="{what}"{" disabled" if disabled else ""}>'
                f"{label}</button>")

    return ('<div class="iir-selbar" role="toolbar" aria-label="selected results">'
            '<span class="iir-selcount" aria-live="polite">Select results to download them or copy their links'
            "</span>" + b("all", "Select all on this page", False) + b("clear", "Clear selection")
            + b("zip", "Download selected (zip)") + b("csv", "Download selected (CSV)") + b("links", "Copy links")
            + '<span class="iir-selsaid" role="status"></span></div>')


def keys_html() -> str:
    """The keyboard's shortcuts on the results (assets/ui/cards.js `iirKeys`), as a tip opened by a click or ?."""
    rows = "".join("<li>" + " or ".join(f"<kbd>{esc(k)}</kbd>" for k in keys.split(" or ")) + f" {esc(what)}</li>"
                   for keys, what in KEYS)
    return (f'<details class="iir-keys"><summary title="Keyboard shortcuts (?)">Keyboard shortcuts</summary>'
            f'<ul aria-label="keyboard shortcuts">{rows}</ul></details>')


def no_match_html(engine, s: Session) -> str:
    """The "no close match" note over a typed description's results, one compact line (what to try; the
    measure on demand), or '' when the best result stands out as it does when the image is there, or the index
    has no calibration (`retrieval/score_profile.py`)."""
    cm = engine.close_match(s) if not s.ended else None
    if cm is None or not cm.weak:
        return ""
    if cm.unknown:
        words = ", ".join(f"“{w}”" for w in cm.unknown[:4])
        return ('<div class="iir-no-match" role="note"><b>No close match</b>: no caption here uses '
                + esc(words) + ". Check the spelling, or try other words.</div>")
    where = "among the photos your filters keep" if s.filters else "here"
    tip = "remove a filter" if s.filters else "try other words, or Closest on the nearest result"
    hit = f" Where the image is missing, this note shows {round(cm.absent_hit * 100)}% of the time." \
        if cm.absent_hit is not None else ""
    return ('<div class="iir-no-match" role="note"><b>No close match</b> ' + esc(where) + ": " + esc(tip) + "."
            '<details class="iir-no-match-scores"><summary>Why</summary>'
            f"The best result (score {cm.best:.3f}) stands out from the next ones by {cm.standout:.2f}; when the "
            f"image is in this collection and comes first, fewer than {round(cm.quantile * 100)}% of searches "
            f"stand out less than {cm.cutoff:.2f}.{esc(hit)}</details></div>")


def fold_of(engine, turn: Turn) -> dict[str, tuple[str, int]]:
    """Near-duplicate folding of a round's results (`Engine.duplicate_groups`): {id: (its group's head, 0)} for
    a folded result, {head: ("", how many it folds)} for a group's head."""
    out: dict[str, tuple[str, int]] = {}
    for group in engine.duplicate_groups(turn):
        if len(group) > 1:
            out[group[0]] = ("", len(group) - 1)
            out.update({i: (group[0], 0) for i in group[1:]})
    return out


def _the_liked(n: int, all_liked: bool = True) -> str:
    if not all_liked:
        return f"the {n} you chose" if n != 1 else "the one you chose"
    return "the one you liked" if n == 1 else f"the {n} you liked"


MAX_PINNED = 6  # images kept in view at most (the most recent first)
PIN_LABELS = {"liked": ("You liked", "You marked it relevant"), "closest": ("Your closest", "You chose it as the "
              "closest to your image"), "reference": ("Reference", "You used it as the reference")}


def _pins_of(t: Turn) -> list[tuple[str, str]]:
    """What one round says the person wants kept in view: (id, why) for its relevant marks, its closest pick and
    its reference."""
    extra = t.extra or {}
    out = [(i, "liked") for i in (t.relevant if t.kind == "feedback" else extra.get("relevant") or [])]
    if t.kind == "closest" and extra.get("clicked"):
        out.append((extra["clicked"], "closest"))
    if t.reference and not t.reference_upload:
        out.append((t.reference, "reference"))
    return out


def pinned_ids(st: UIState) -> list[tuple[str, str]]:
    """(id, why) of the images the person marked relevant, chose as the closest or used as the reference in this
    search, most recent first: kept in view, first on the page, across rounds (until Unpin: `UIState.unpinned`),
    unless the round on the page shows them anyway."""
    if not st.started:
        return []
    shown, out, seen = set(st.session.last.shown), [], set()
    for t in reversed(st.session.turns):
        for image_id, why in _pins_of(t):
            if image_id in seen or image_id in shown or image_id in st.unpinned:
                continue
            seen.add(image_id)
            out.append((image_id, why))
    return out[:MAX_PINNED]


def liked_ids(st: UIState) -> list[str]:
    """The ids `pinned_ids` keeps in view (first on the page, with a badge saying why)."""
    return [i for i, _ in pinned_ids(st)]


def _liked_card(engine, image_id: str, why: str = "liked") -> str:
    """A result the person liked, chose or referred to in an earlier round: kept first on the page, with only
    "Found it" and Unpin."""
    row = engine.index.row_of.get(image_id)
    if row is None:
        return ""
    raw = engine.index.records[row].caption
    cap = plain_caption(raw) or image_id  # in plain words, as on the other cards
    url = image_url(engine.index, image_id)
    full = image_url(engine.index, image_id, full=True) if url else ""
    pic = _img(url, _alt(raw, image_id))
    if url:
        pic = (f'<button type="button" class="iir-open" data-action="open" data-id="{esc(image_id)}" '
               f'data-src="{esc(full or url)}" title="Larger view" aria-label="Larger view: {esc(cap)}">{pic}</button>')
    label, title = PIN_LABELS.get(why, PIN_LABELS["liked"])
    unpin = (f'<button type="button" class="iir-btn iir-unpin" data-action="unpin" data-id="{esc(image_id)}" '
             f'title="Stop keeping it in view (what you said about it still counts)">Unpin</button>')
    return (f'<article class="iir-card is-liked is-rel is-pin-{esc(why)}" data-id="{esc(image_id)}" role="listitem">'
            f'<div class="iir-pic"><span class="iir-liked" title="{esc(title)}: kept in view while the '
            f'rounds show new images">{esc(label)}</span>{pic}</div>'
            f'<p class="iir-cap" title="{esc(cap)}">{esc(plain_caption(raw, CARD_CHARS) or image_id)}</p>'
            f'<div class="iir-actions">{_button("found", image_id)}{unpin}</div></article>')


def _turn_label(t: Turn) -> str:
    kind = {
        "describe": f"described “{t.user_text}”",
        "answer": f"answered “{answer_words(t)}”",
        "skip": "skipped the question",
        "feedback": f"marked {len(t.relevant)} relevant, {len(t.irrelevant)} not relevant",
        "relative": f"“{t.user_text}” relative to " + ("an uploaded image" if t.reference_upload else
                                                        (t.reference or "the top result")),
        "search": f"searched “{t.user_text}”",
        "closest": ("picked none as close" if t.extra.get("clicked") is None else "picked the closest")
                   + (f": “{t.extra['said']}”" if t.extra.get("said") else ""),
        "tell": f"said “{t.user_text}”",
        "marks": f"marked {len(t.extra.get('relevant', []))} like it",
        "like": f"more like {t.extra.get('like', 'one result')}",
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
                    f'title="I found it: this is my image" aria-label="I found it: {esc(_alt(h.caption, h.id))}">'
                    "Found</button>")
            thumbs.append(f'<figure class="{cls}" title="{esc(_alt(h.caption, h.id))}">'
                          f'{_img(image_url(engine.index, h.id), _alt(h.caption, h.id))}{pick}</figure>')
        rows.append(f'<section class="iir-round"><h4>{esc(_turn_label(t))}</h4>'
                    f'<div class="iir-thumbs">{"".join(thumbs)}</div></section>')
    tip = "" if s.ended else '<p class="iir-strip-tip">Passed over your image? Press <b>Found</b> under it.</p>'
    return f'<div class="iir-strip" aria-label="earlier rounds">{tip}{"".join(rows)}</div>'


def options_html(engine, q) -> str:
    """A question's clickable answers: thumbnails with a short caption (choice), or buttons (yes/no, none)."""
    from interactive_ir.types import NONE_OF_THESE

    items = []
    for n, o in enumerate(q.options):
        label = answer = o.label.strip() or f"option {n + 1}"  # the tooltip: the answer a click gives
        if o.image_id and label != NONE_OF_THESE:  # a picture's caption, in plain words and short
            whole = _index_caption(engine, o.image_id) or label  # the engine's label is cut already
            label = plain_caption(whole, OPTION_CHARS) or f"option {n + 1}"
            answer = plain_caption(answer) or label  # the tooltip in plain words too, whole
        pic = ""
        if o.image_id:
            url = image_url(engine.index, o.image_id)
            pic = _img(url, label, "iir-opt-img")
        cls = "iir-opt" + (" iir-opt-pic" if o.image_id else "") + (" iir-opt-none" if label == NONE_OF_THESE else "")
        text = label[0].upper() + label[1:] if label == NONE_OF_THESE or not o.image_id else label
        data_id = f' data-id="{esc(o.image_id)}"' if o.image_id else ""
        items.append(f'<button type="button" class="{cls}" data-action="choose" data-index="{n}"{data_id} '
                     f'data-question="{esc(q.text)}" data-round="{q.round}" title="{esc(answer)}">'
                     f'{pic}<span class="iir-opt-label">{esc(text)}</span></button>')
    kind = "iir-opts-yesno" if q.kind == "yesno" else "iir-opts-choice"
    hint = '<div class="iir-qnote">Click the closest one (or type an answer below).</div>' if q.kind == "choice" else ""
    return f'<div class="iir-opts {kind}" role="group" aria-label="answers: click one">{"".join(items)}</div>{hint}'


def _index_caption(engine, image_id: str) -> str:
    """The index's caption of `image_id` ("" when there is no index or it does not hold the image)."""
    index = getattr(engine, "index", None)
    row = index.row_of.get(image_id) if index is not None else None
    return index.records[row].caption if row is not None else ""


def answer_words(t: Turn) -> str:
    """An answer as the "You:" line shows it: a clicked picture option's caption in plain words (the session
    records the index caption: "closest to: clipart of Bulldog Puppy; keywords: ..."), typed words as typed."""
    from interactive_ir.types import NONE_OF_THESE

    choice = t.extra.get("choice") if isinstance(t.extra, dict) else None
    label = str((choice or {}).get("label", "")).strip()
    if not (choice and choice.get("image_id")) or not label or label == NONE_OF_THESE or label not in t.user_text:
        return t.user_text
    return t.user_text.replace(label, plain_caption(label, CARD_CHARS) or label)


def dialogue_html(st: UIState, questions_on: bool, questions_off_reason: str = "", engine=None) -> str:
    """The conversation so far and the question waiting for an answer (with its clickable options)."""
    lines = []
    s: Session | None = st.session
    for t in (s.turns if s else []):
        if t.kind == "describe":
            lines.append(("you", t.user_text))
        elif t.kind == "answer":
            lines.append(("you", answer_words(t)))
        elif t.kind == "skip":
            lines.append(("note", "(question skipped)"))
        elif t.kind == "feedback":
            lines.append(("note", f"(you marked {len(t.relevant)} relevant, {len(t.irrelevant)} not relevant)"))
        elif t.kind == "relative":
            lines.append(("you", f"{t.user_text}  (relative to a reference image)"))
        elif t.kind == "closest":
            picked = "none of these is close" if t.extra.get("clicked") is None else "this one is the closest"
            said = t.extra.get("said")
            lines.append(("you", f"{said}  ({picked})") if said else ("note", f"(you said {picked})"))
        elif t.kind == "marks":
            lines.append(("note", f"(you marked {len(t.extra.get('relevant', []))} like it, "
                                  f"{len(t.extra.get('irrelevant', []))} not it)"))
        elif t.kind == "like":
            lines.append(("note", "(more like one of the results)"))
        elif t.extra.get("added") and t.user_text:  # typed in the search box: not an answer to the question above
            lines.append(("you", f"{t.user_text}  (added in the search box)"))
        elif t.user_text:
            lines.append(("you", t.user_text))
        if t.error:  # a model's failure as a visitor reads it: no server, no secret (`redact.public_text`)
            lines.append(("error", no_paths(public_text(t.error))))
        if t.question and t is not (s.last if s else None):
            lines.append(("system", t.question))
    history = []
    for who, text in lines:
        role = {"you": "You", "system": "System", "note": "", "error": "Note"}[who]
        label = f'<b class="iir-who">{role}:</b> ' if role else ""
        history.append(f'<div class="iir-msg iir-{who}">{label}{esc(text)}</div>')
    now = []  # what waits for the person: always in view, under the (scrolled, capped) history
    pending = s.pending_question if s else ""
    if st.pending and s and s.turns and not s.ended:
        say = working_md(st).lstrip(" ·").rstrip("…") or "the system is working on these results"
        now.append(f'<div class="iir-msg iir-note iir-asking" role="status">{esc(say[0].upper() + say[1:])}… '
                   "(you can mark results or start again meanwhile)</div>")
    elif pending and not (s and s.ended):
        q = s.question
        fb = q is not None and q.kind == "fallback"
        note = ('<div class="iir-qnote">A question built from these results (the language model gave none that helps).</div>'
                if fb else "")
        opts = options_html(engine, q) if engine is not None and q is not None and q.options else ""
        now.append(f'<div class="iir-question" role="status"><b class="iir-who">System asks:</b> '
                   f"{esc(pending)}{note}{opts}</div>")
    elif not questions_on:
        now.append(f'<div class="iir-qoff" role="note">{esc(questions_off_reason or "Questions are off.")}</div>')
    elif not s or not s.turns:
        now.append('<div class="iir-msg iir-note">The system will ask questions about your image here.</div>')
    # the history is a bottom-anchored scroll box (column-reverse around one block): its newest lines show
    past = (f'<div class="iir-history" tabindex="0" role="log" aria-label="the dialogue so far"><div>'
            f'{"".join(history)}</div></div>' if history else "")
    return f'<div class="iir-dialogue" aria-label="dialogue">{past}{"".join(now)}</div>'


def reference_html(engine, st: UIState) -> str:
    """What a relative caption will be compared against."""
    if st.upload:
        return (f'<div class="iir-ref">{_img(upload_url(st.upload), "your uploaded reference image", "iir-ref-img")}'
                "<span>Reference: <b>your uploaded image</b></span></div>")
    if st.reference:
        raw = _index_caption(engine, st.reference)
        cap = plain_caption(raw, CARD_CHARS)  # one short line, as on its card (a photo's paragraph is long)
        url = image_url(engine.index, st.reference)
        return (f'<div class="iir-ref">{_img(url, _alt(raw, st.reference), "iir-ref-img")}'
                f"<span>Reference: <b>{esc(cap or st.reference)}</b></span></div>")
    upload = modes(engine).upload
    why = "" if upload else f'<p class="iir-no-upload">{esc(NO_UPLOAD)}</p>'
    if st.started:
        return ('<div class="iir-ref iir-ref-none">Reference: the top result of the last round. '
                f"Pick another with “Use as reference”{', or upload one' if upload else ''}.{why}</div>")
    if upload:
        return '<div class="iir-ref iir-ref-none">Upload a reference image, or start with a description.</div>'
    return ('<div class="iir-ref iir-ref-none">Start with a description, then pick a result with “Use as '
            f"reference” and say how your image differs from it.{why}</div>")


def status_md(st: UIState) -> str:
    """One line: where the search stands and what to do next."""
    notice = f"{st.notice}  \n" if st.notice else ""
    if not st.session or not st.session.turns:
        return notice + "Start by describing the image you are looking for."
    s = st.session
    if s.found:
        f = s.found
        return (notice + f"✓ **Found** your image in round {f['round'] + 1}, at place {f['rank']} of the results. "
                "Press **New search** to look for another image.")
    rel, irr = st.marked()
    marks = (f" · marked {len(rel)} relevant, {len(irr)} not relevant: press **More like my marks**"
             if rel or irr else (" · answer the question, mark results, or use one as a reference" if s.pending_question
                                 else " · mark results, or use one as a reference"))
    pins = pinned_ids(st)
    liked = len(pins)
    new = "" if s.last.seen else "new "  # "new" only when none was shown before (`Turn.seen`, as the page's head)
    what = (f"{len(s.last.shown)} {new}results; {_the_liked(liked, all(w == 'liked' for _, w in pins))} "
            f"{'stays' if liked == 1 else 'stay'} first" if liked
            else f"{len(s.last.shown)} results")
    return notice + f"Round {s.last.round + 1} · {what}{marks}{working_md(st)}"


WORKING = {  # what the status line says while a model step is due or runs
    "refine": {"engine": "the language model is rewriting the dialogue to refine these results",
               "answer": "the language model is rewriting the dialogue to refine these results",
               "feedback": "the language model is reading your marks to refine these results",
               "relative": "the language model is reading your words to refine these results"},
    "ask": "the system is writing a question about these results",
}


def working_md(st: UIState) -> str:
    """' · <what the models are doing>…' while model work of the round is due, else ''."""
    step = st.working or (st.todo[0] if st.todo else "")
    if not step or not st.started or st.ended:
        return ""
    say = WORKING.get(step, "")
    if isinstance(say, dict):
        say = say.get(st.redo.action if st.redo else "", "the language model is refining these results")
    return f" · {say}…" if say else ""
