"""The Gradio layout of the study page: its sections, the render of a `View` onto them, the handlers, and
the events wired to a `StudyPage` (interactive_ir.study.page.logic) in one block (`_wire`).

Model steps run in two events: the round (results, `show_progress="hidden"` with the page's own
"Searching" note through a body class) and then the question (`StudyPage` action "ask"), so results show
at once and the question follows.
"""

# no `from __future__ import annotations`: Gradio reads the `gr.Request` and `gr.EventData` annotations of
# the handlers at run time

from pathlib import Path
from types import SimpleNamespace

from interactive_ir.study.page.logic import WELCOME, StudyPage, browser_secret
from interactive_ir.study.page.render import STYLE, TabState, form_title, header_md
from interactive_ir.ui import inputs as guarded

ASSETS = Path(__file__).resolve().parents[3] / "assets" / "study"
FORMS = ("task", "condition", "end")  # the questionnaires, in the order they can be due

CLOCK_JS = "(...args) => { args[args.length - 1] = Date.now() / 1000; return args; }"
BUSY_JS = ("(...args) => { document.body.classList.add('iir-busy'); args[args.length - 1] = Date.now() / 1000; "
           "return args; }")
POLL_S = 1.0  # seconds between a competition page's checks for the task the organiser opens
IDLE_S = 30  # seconds without a key, pointer or scroll after which the page logs an idle period
IDLE_JS = "() => { document.body.classList.remove('iir-busy'); }"
BUSY_CSS = """<style>
#iir-working { display: none; }
body.iir-busy #iir-working { display: block; }
body.iir-busy #iir-results { opacity: .55; }
</style>"""
WORKING = '<span class="iir-working" role="status">Searching: the results will appear here in a moment</span>'


class Components(SimpleNamespace):
    """The page's Gradio components by name, filled in by the section builders below; `forms` maps a
    questionnaire to (its column, title, inputs, submit button)."""

    def pages(self) -> dict:
        """Phase -> the column showing it."""
        return {"start": self.pg_start, "briefing": self.pg_brief, "search": self.pg_search, "done": self.pg_done,
                "declined": self.pg_done, "screened_out": self.pg_done}

    def form_inputs(self) -> list:
        return [comp for f in self.forms.values() for comp in f[2]]

    def outputs(self) -> list:
        """Every component an event may change, in one fixed order."""
        forms = self.forms.values()
        return [self.token_store, self.tab_state, self.header, self.status, self.pg_start, self.consent_row,
                self.pg_brief, self.pg_search, self.pg_done, self.consent_md, self.brief, self.brief_target,
                self.search_target, self.budget, self.desc, self.g_conv, self.question, self.answer_box,
                self.fb_btn, self.g_comp, self.reference, self.caption_box, self.query_box, self.results,
                self.give_up_btn, self.g_confirm, self.done_md, self.start_btn, *[f[0] for f in forms],
                *[f[1] for f in forms], *self.form_inputs()]

    def lock_outputs(self) -> list:
        """What the description lock's countdown changes (a competition page's tick redraws only these)."""
        return [self.tab_state, self.status, self.desc, self.answer_box, self.caption_box, self.query_box]


# ---------------------------------------------------------------- the sections


def _form_input(gr, q):
    """The Gradio input of one questionnaire item."""
    eid = f"iir-q-{q.id}"
    if q.type == "likert":
        info = f"1 = {q.low_label}, {q.points} = {q.high_label}"
        return guarded.Radio([(str(i), i) for i in range(1, q.points + 1)], label=q.text, info=info, elem_id=eid)
    if q.type == "choice":
        return guarded.Radio(list(q.options), label=q.text, elem_id=eid)
    if q.type == "slider" and q.step and (q.maximum - q.minimum) / q.step <= 20:
        # a row of marks (NASA-TLX's 21 gradations): nothing is chosen until the participant clicks, so a
        # required item cannot be submitted by leaving a slider where it started
        n = int(round((q.maximum - q.minimum) / q.step))
        marks = [q.minimum + i * q.step for i in range(n + 1)]
        marks = [int(m) if float(m).is_integer() else m for m in marks]
        return guarded.Radio([(str(m), m) for m in marks], label=q.text,
                        info=f"{q.minimum:g} = {q.low_label}, {q.maximum:g} = {q.high_label}", elem_id=eid,
                        elem_classes=["iir-scale"])
    if q.type == "slider":
        return gr.Slider(q.minimum, q.maximum, value=None, step=q.step, label=q.text,
                         info=f"{q.minimum:g} = {q.low_label}, {q.maximum:g} = {q.high_label}", elem_id=eid)
    if q.type == "number":
        # no minimum/maximum on the component: Gradio would answer an age of 12 with its bare "Error: Value 12 is
        # less than minimum value 16." before the page's own sentence (questionnaire.check_one) could say what to do
        return gr.Number(label=q.text, info=f"a number from {q.minimum:g} to {q.maximum:g}", value=None, elem_id=eid)
    return gr.Textbox(label=q.text, lines=3, elem_id=eid)


def _top(gr, c: Components, page: StudyPage) -> None:
    """The page's state (token, tab, clock), its header and status line."""
    study = page.study
    gr.HTML(STYLE + BUSY_CSS, padding=False, js_on_load=None)
    c.token_store = gr.BrowserState("", storage_key=f"iir-study-{study.study_id}",
                                    secret=browser_secret(page.runner.log))
    c.tab_state = gr.State(TabState())
    c.clock = gr.Number(value=0, visible=False)
    c.header = gr.Markdown(header_md(study, None), elem_id="iir-study-header")
    if study.recruitment.platform == "huggingface":  # participants sign in; their user name is the study id
        from interactive_ir.backends.visitor_llm import check_sign_in_possible

        check_sign_in_possible()
        gr.LoginButton(elem_id="iir-study-login", size="sm")
    c.status = gr.Markdown(WELCOME, elem_id="iir-status")
    c.poll_timer = gr.Timer(POLL_S, active=study.competition)  # a competition: the organiser opens each task


def _consent_and_briefing(gr, c: Components, study) -> None:
    with gr.Column(visible=True, elem_id="iir-study-consent") as c.pg_start:
        c.consent_md = gr.Markdown(study.consent)
        with gr.Row(visible=False) as c.consent_row:  # shown once the page load has read the link
            c.agree_btn = gr.Button("I agree", variant="primary", elem_id="iir-agree")
            c.decline_btn = gr.Button("I do not agree", elem_id="iir-decline")
    with gr.Column(visible=False, elem_id="iir-study-brief") as c.pg_brief:
        with gr.Row(equal_height=False):
            c.brief_target = gr.HTML("", js_on_load=None, min_width=220, elem_id="iir-study-brief-target")
            c.brief = gr.Markdown("", elem_id="iir-study-brief-text")
        c.start_btn = gr.Button("Start searching", variant="primary", elem_id="iir-start-task")


def _search_side(gr, c: Components, timer_js: str) -> None:
    """The search page's side column: the target, the budget and timer, giving up."""
    with gr.Column(scale=1, min_width=220):
        c.search_target = gr.HTML("", js_on_load=None, elem_id="iir-study-target")
        c.budget = gr.HTML("", js_on_load=timer_js, elem_id="iir-study-budget")
        c.give_up_btn = gr.Button("Give up", variant="stop", elem_id="iir-give-up")
        with gr.Group(visible=False, elem_id="iir-give-up-confirm") as c.g_confirm:
            gr.Markdown("**End this task without finding the image?**")
            with gr.Row():
                c.give_up_yes = gr.Button("Yes, end the task", variant="stop", size="sm", elem_id="iir-give-up-yes")
                c.give_up_no = gr.Button("Keep searching", size="sm", elem_id="iir-give-up-no")


def _search_inputs(gr, c: Components, cards_js: str) -> None:
    """The search page's main column: the description, then each mode's inputs."""
    with gr.Column(scale=3, min_width=320):
        c.desc = gr.Textbox(label="Describe the image you are looking for", elem_id="iir-desc", max_lines=4,
                            submit_btn="Search")
        with gr.Group(visible=False) as c.g_conv:
            c.question = gr.HTML("", js_on_load=cards_js, elem_id="iir-dialogue")
            c.answer_box = gr.Textbox(label="Your answer", elem_id="iir-answer", max_lines=4, submit_btn="Answer")
            c.skip_btn = gr.Button("Skip question", size="sm", elem_id="iir-skip")
        c.fb_btn = gr.Button("More like my marks", variant="primary", visible=False, elem_id="iir-feedback")
        with gr.Group(visible=False) as c.g_comp:
            c.reference = gr.HTML("", js_on_load=None, elem_id="iir-reference")
            c.caption_box = gr.Textbox(label="How does your image differ from the reference?",
                                       elem_id="iir-caption", max_lines=4, submit_btn="Search")
        c.query_box = gr.Textbox(label="Search again with new words", visible=False, elem_id="iir-query",
                                 max_lines=4, submit_btn="Search")


def _search(gr, c: Components, cards_js: str, timer_js: str) -> None:
    with gr.Column(visible=False, elem_id="iir-study-search") as c.pg_search:
        with gr.Row(equal_height=False):
            _search_side(gr, c, timer_js)
            _search_inputs(gr, c, cards_js)
        gr.HTML(WORKING, js_on_load=None, elem_id="iir-working")
        c.results = gr.HTML("", elem_id="iir-results", js_on_load=cards_js, min_height=120)


def _forms_and_end(gr, c: Components, study) -> None:
    """The questionnaires the study asks, and the end page."""
    c.forms = {}
    for form in FORMS:
        items = study.form(form)
        if not items:
            continue
        with gr.Column(visible=False, elem_id=f"iir-study-form-{form}") as col:
            title = gr.Markdown(form_title(form, None))
            inputs = [_form_input(gr, q) for q in items]
            btn = gr.Button("Submit and continue", variant="primary",
                            elem_id="iir-submit" if form == "task" else f"iir-submit-{form}")
        c.forms[form] = (col, title, inputs, btn)
    with gr.Column(visible=False, elem_id="iir-study-done") as c.pg_done:
        c.done_md = gr.Markdown("", elem_id="iir-study-end")
        c.leave_btn = gr.Button("Next participant", size="sm", elem_id="iir-leave",
                                visible=study.recruitment.platform == "none")


# ---------------------------------------------------------------- rendering and handlers


def render(page: StudyPage, c: Components, token: str, tab: TabState, clear: tuple = ()) -> dict:
    """The update of every output for the page's `View` of (token, tab); `clear` empties those text boxes."""
    import gradio as gr

    v = page.view(token, tab)
    if v.status.startswith("⚠️"):
        gr.Warning(v.status[2:].strip())
    typing = {"interactive": not v.locked_s}  # the organiser's description lock keeps the text boxes shut
    out = {c.token_store: token, c.tab_state: tab, c.header: v.header, c.status: v.status,
           c.consent_row: gr.update(visible=v.can_join),
           c.consent_md: v.consent or page.study.consent, c.brief: v.brief, c.brief_target: v.brief_target,
           c.search_target: v.search_target, c.budget: v.budget,
           c.desc: gr.update(visible=v.show_describe, **typing), c.g_conv: gr.update(visible=v.show_conversation),
           c.question: v.question, c.answer_box: gr.update(visible=v.show_answer, **typing),
           c.fb_btn: gr.update(visible=v.show_feedback),
           c.g_comp: gr.update(visible=v.show_composed), c.reference: v.reference,
           c.query_box: gr.update(visible=v.show_text, **typing), c.results: v.results,
           c.caption_box: gr.update(**typing), c.start_btn: gr.update(visible=not v.waiting),
           c.give_up_btn: gr.update(value=v.give_up_label, visible=not v.confirm_give_up),
           c.g_confirm: gr.update(visible=v.confirm_give_up), c.done_md: v.done}
    pages = c.pages()
    shown = pages.get(v.phase)
    for pg in set(pages.values()):
        out[pg] = gr.update(visible=pg is shown)
    for form, (col, title, inputs, _) in c.forms.items():
        showing = v.phase == "questionnaire" and v.form == form
        out[col] = gr.update(visible=showing)
        out[title] = v.form_title if v.form == form else form_title(form, None)
        if not showing:
            for comp in inputs:
                out[comp] = None
    for box in clear:  # keep any visibility update of the box
        upd = out.get(box)
        out[box] = gr.update(**{**(upd if isinstance(upd, dict) else {}), "value": ""})
    return out


def _handler(page: StudyPage, c: Components, name: str, clear: tuple = (), n_args: int = 0):
    """The handler of page action `name` taking `n_args` values (the event's API name: on_<name>)."""
    def fn(token, tab, *rest):
        *args, ts = rest
        token, tab = page.act(name, token, tab, *args[:n_args], client_ts=ts)
        return render(page, c, token, tab, clear if not tab.notice.startswith("⚠️") else ())

    fn.__name__ = f"on_{name}"
    return fn


def _on_load(page: StudyPage, c: Components):
    import gradio as gr

    def on_load(token, tab, ts, request: gr.Request, profile: gr.OAuthProfile | None = None):
        page.arrive(tab, dict(request.query_params) if request is not None else {},
                    getattr(profile, "username", "") or "")  # the name only (recruitment: huggingface)
        if page.who(token, tab):
            token, tab = page.act("resume", token, tab, client_ts=ts)
        return render(page, c, token or "", tab)

    return on_load


def _on_poll(page: StudyPage, c: Components):
    import gradio as gr

    def on_poll(token, tab, ts):
        """A competition page's tick (every POLL_S): the opened task starts; the lock counts down."""
        token, tab, what = page.poll(token, tab, client_ts=ts)
        if what == "all":  # e.g. the task opened: its organiser description's question, if any, comes with it
            token, tab = page.act("ask", token, tab, client_ts=ts)
            return render(page, c, token, tab)
        out = {comp: gr.skip() for comp in c.outputs()}
        if what == "lock":
            full = render(page, c, token, tab)
            out.update({comp: full[comp] for comp in c.lock_outputs()})
        return out

    return on_poll


def _on_ask(page: StudyPage, c: Components):
    def on_ask(token, tab, ts):
        token, tab = page.act("ask", token, tab, client_ts=ts)
        return render(page, c, token, tab)

    return on_ask


def _on_card(page: StudyPage, c: Components):
    import gradio as gr

    def on_card(token, tab, ts, evt: gr.EventData):
        data = getattr(evt, "_data", None)
        data = data if isinstance(data, dict) else {}  # event data that is not an object: nothing asked
        token, tab = page.act("card", token, tab, str(data.get("action", "")), str(data.get("id", "")),
                              client_ts=ts)
        return render(page, c, token, tab)

    return on_card


def _on_paradata(page: StudyPage):
    import gradio as gr

    def on_paradata(token, tab, ts, evt: gr.EventData):
        """The page's focus, visibility and idle changes (paradata.js): logged, nothing redrawn."""
        data = getattr(evt, "_data", None)
        data = data if isinstance(data, dict) else {}  # event data that is not an object: nothing asked
        page.act("paradata", token, tab, data.get("events"), client_ts=ts)

    return on_paradata


def _on_choose(page: StudyPage, c: Components):
    import gradio as gr

    def on_choose(token, tab, ts, evt: gr.EventData):
        """A click on one of the pending question's options (a thumbnail, none of these, yes/no)."""
        data = getattr(evt, "_data", None)
        data = data if isinstance(data, dict) else {}  # event data that is not an object: nothing asked
        token, tab = page.act("choose", token, tab, data.get("index"), str(data.get("question") or ""),
                              data.get("round"), client_ts=ts)
        return render(page, c, token, tab)

    return on_choose


def _on_submit(page: StudyPage, c: Components, form: str):
    items = page.study.form(form)

    def on_submit(token, tab, *rest):
        *values, ts = rest
        answers = {q.id: v for q, v in zip(items, values)}
        token, tab = page.act("submit", token, tab, answers, client_ts=ts)
        return render(page, c, token, tab)

    return on_submit


def _on_join(page: StudyPage, c: Components, agreed: bool):
    import gradio as gr

    from interactive_ir.ui.serving.limits import client_of

    def on_join(t, tab, ts, request: gr.Request):
        tab.client = client_of(request)  # enrolments are limited per address
        return render(page, c, *page.act("join", t, tab, agreed, client_ts=ts))

    return on_join


def _on_close():
    """`demo.unload`: the participant's tab closed; Gradio's records of it go now (`ui.serving.tabs`), not an
    hour later (the state) or never (the queue's). A participant who comes back resumes from the token kept
    in the browser, not from the closed tab's records."""
    import gradio as gr

    from interactive_ir.ui.serving.tabs import on_tab_closed

    def on_close(request: gr.Request):
        on_tab_closed(request)

    return on_close


# ---------------------------------------------------------------- the events, in one block


def _wire(demo, page: StudyPage, c: Components) -> None:
    outputs = c.outputs()
    base, timed = [c.token_store, c.tab_state], [c.token_store, c.tab_state, c.clock]
    search = {"concurrency_id": "search", "trigger_mode": "once", "show_progress": "hidden", "js": BUSY_JS}
    quick = {"trigger_mode": "once", "show_progress": "hidden", "js": CLOCK_JS}
    asking = {"concurrency_id": "model", "show_progress": "hidden", "js": CLOCK_JS}

    def act(name, clear=(), n_args=0):
        return _handler(page, c, name, clear, n_args)

    def with_question(event):  # results first; then the system's question (the slow LLM step)
        event.then(None, None, None, js=IDLE_JS).then(_on_ask(page, c), timed, outputs, **asking)

    demo.load(_on_load(page, c), timed, outputs, js=CLOCK_JS, show_progress="hidden").then(
        _on_ask(page, c), timed, outputs, **asking)
    c.agree_btn.click(_on_join(page, c, True), timed, outputs, **quick)
    c.decline_btn.click(_on_join(page, c, False), timed, outputs, **quick)
    c.start_btn.click(act("start"), timed, outputs, **quick).then(_on_ask(page, c), timed, outputs, **asking)
    c.poll_timer.tick(_on_poll(page, c), timed, outputs, js=CLOCK_JS, show_progress="hidden",
                      concurrency_id="poll", concurrency_limit=None)
    with_question(c.desc.submit(act("describe", (c.desc,), 1), [*base, c.desc, c.clock], outputs, **search))
    with_question(c.answer_box.submit(act("answer", (c.answer_box,), 1), [*base, c.answer_box, c.clock], outputs,
                                      **search))
    with_question(c.skip_btn.click(act("skip"), timed, outputs, **search))
    with_question(c.fb_btn.click(act("feedback"), timed, outputs, **search))
    with_question(c.caption_box.submit(act("relative", (c.caption_box,), 1), [*base, c.caption_box, c.clock],
                                       outputs, **search))
    with_question(c.query_box.submit(act("search", (c.query_box,), 1), [*base, c.query_box, c.clock], outputs,
                                     **search))
    with_question(c.question.click(_on_choose(page, c), timed, outputs, **search))
    c.results.click(_on_card(page, c), timed, outputs, **quick)
    c.budget.click(_on_card(page, c), timed, outputs, **quick)  # the timer reports {action: "timeout"}
    c.give_up_btn.click(act("give_up"), timed, outputs, **quick)
    c.give_up_yes.click(act("give_up_yes"), timed, outputs, **quick)
    c.give_up_no.click(act("give_up_no"), timed, outputs, **quick)
    for form, (_, _, inputs, btn) in c.forms.items():
        btn.click(_on_submit(page, c, form), [*base, *inputs, c.clock], outputs, **quick)
    c.leave_btn.click(act("leave"), timed, outputs, **quick)
    c.paradata.click(_on_paradata(page), timed, None, js=CLOCK_JS, show_progress="hidden", trigger_mode="multiple",
                     concurrency_id="paradata", concurrency_limit=None)
    demo.unload(_on_close())


def layout(page: StudyPage, password: str):
    """The study page (a `gr.Blocks`) over `page`, with the admin page at /admin and, when the study
    file asks for it (`scoreboard: true`), the scoreboard at /scoreboard."""
    import gradio as gr

    from interactive_ir.study.page.admin import AdminGate, LoginLimiter, add_admin_page
    from interactive_ir.study.page.guard import study_guard
    from interactive_ir.ui.layout import ASSETS as UI_ASSETS
    from interactive_ir.ui.serving.limits import Addresses
    from interactive_ir.ui.serving.uploads import delete_cache

    cards_js = (UI_ASSETS / "cards.js").read_text()
    timer_js = (ASSETS / "timer.js").read_text()
    study = page.study
    class StudyBlocks(gr.Blocks):
        """The study's page: participants see no Gradio footer links ("Use via API", "Built with Gradio",
        Settings), whoever launches it (`launch(footer_links=[])` unless the caller names links)."""

        extra_routes: list = []  # the admin's export downloads

        def launch(self, *args, footer_links=None, app_kwargs=None, **kwargs):
            app_kwargs = dict(app_kwargs or {})
            app_kwargs["routes"] = [*self.extra_routes, *app_kwargs.get("routes", [])]
            return super().launch(*args, footer_links=[] if footer_links is None else footer_links,
                                  app_kwargs=app_kwargs, **kwargs)

    with StudyBlocks(title=study.title or "Image search study", delete_cache=delete_cache()) as demo:
        gr.Navbar(visible="hidden", main_page_name=False)  # no "Home" bar ("hidden": mounted, so it applies)
        c = Components()
        _top(gr, c, page)
        c.paradata = gr.HTML(f'<span hidden data-idle-s="{IDLE_S}"></span>', padding=False, elem_id="iir-study-paradata",
                             js_on_load=(ASSETS / "paradata.js").read_text())
        _consent_and_briefing(gr, c, study)
        _search(gr, c, cards_js, timer_js)
        _forms_and_end(gr, c, study)
        _wire(demo, page, c)
    guard = study_guard()
    gate = AdminGate(password, LoginLimiter(trusted=Addresses(guard.admin_from), surge_sources=guard.admin_surge_sources),
                     link_s=guard.admin_link_h * 3600)
    demo.extra_routes = add_admin_page(demo, page, password, gate).routes()
    if study.scoreboard:
        from interactive_ir.study.page.scoreboard import add_scoreboard_page

        add_scoreboard_page(demo, page)
    return demo
