"""The Gradio layout of the study page: components, and events wired to a `StudyPage` (interactive_ir.study.ui).

Model steps run in two events: the round (results, `show_progress="hidden"` with the page's own
"Searching" note through a body class) and then the question (`StudyPage` action "ask"), so results show
at once and the question follows.
"""

# no `from __future__ import annotations`: Gradio reads the `gr.EventData` annotation at run time

from pathlib import Path

from interactive_ir.study.pages import STYLE, TabState, form_title, header_md
from interactive_ir.study.ui import CLOCK_JS, WELCOME, WORKING, StudyPage, browser_secret

ASSETS = Path(__file__).resolve().parent.parent.parent / "assets" / "study"


def _form_input(gr, q):
    """The Gradio input of one questionnaire item."""
    eid = f"iir-q-{q.id}"
    if q.type == "likert":
        info = f"1 = {q.low_label}, {q.points} = {q.high_label}"
        return gr.Radio([(str(i), i) for i in range(1, q.points + 1)], label=q.text, info=info, elem_id=eid)
    if q.type == "choice":
        return gr.Radio(list(q.options), label=q.text, elem_id=eid)
    if q.type == "slider" and q.step and (q.maximum - q.minimum) / q.step <= 20:
        # a row of marks (NASA-TLX's 21 gradations): nothing is chosen until the participant clicks, so a
        # required item cannot be submitted by leaving a slider where it started
        n = int(round((q.maximum - q.minimum) / q.step))
        marks = [q.minimum + i * q.step for i in range(n + 1)]
        marks = [int(m) if float(m).is_integer() else m for m in marks]
        return gr.Radio([(str(m), m) for m in marks], label=q.text,
                        info=f"{q.minimum:g} = {q.low_label}, {q.maximum:g} = {q.high_label}", elem_id=eid,
                        elem_classes=["iir-scale"])
    if q.type == "slider":
        return gr.Slider(q.minimum, q.maximum, value=None, step=q.step, label=q.text,
                         info=f"{q.minimum:g} = {q.low_label}, {q.maximum:g} = {q.high_label}", elem_id=eid)
    if q.type == "number":
        return gr.Number(label=q.text, minimum=q.minimum, maximum=q.maximum, value=None, elem_id=eid)
    return gr.Textbox(label=q.text, lines=3, elem_id=eid)


BUSY_JS = ("(...args) => { document.body.classList.add('iir-busy'); args[args.length - 1] = Date.now() / 1000; "
           "return args; }")
IDLE_JS = "() => { document.body.classList.remove('iir-busy'); }"
BUSY_CSS = """<style>
#iir-working { display: none; }
body.iir-busy #iir-working { display: block; }
body.iir-busy #iir-results { opacity: .55; }
</style>"""


def layout(page: StudyPage, password: str):
    import gradio as gr

    from interactive_ir.ui.layout import ASSETS as UI_ASSETS

    study = page.study
    cards_js = (UI_ASSETS / "cards.js").read_text()
    timer_js = (ASSETS / "timer.js").read_text()
    from interactive_ir.ui.serving.uploads import delete_cache

    with gr.Blocks(title=study.title or "Image search study", delete_cache=delete_cache()) as demo:
        gr.HTML(STYLE + BUSY_CSS, padding=False, js_on_load=None)
        token_store = gr.BrowserState("", storage_key=f"iir-study-{study.study_id}",
                                      secret=browser_secret(page.runner.log))
        tab_state = gr.State(TabState())
        clock = gr.Number(value=0, visible=False)
        header = gr.Markdown(header_md(study, None), elem_id="iir-study-header")
        status = gr.Markdown(WELCOME, elem_id="iir-status")

        with gr.Column(visible=True, elem_id="iir-study-consent") as pg_start:
            consent_md = gr.Markdown(study.consent)
            with gr.Row(visible=False) as consent_row:  # shown once the page load has read the link
                agree_btn = gr.Button("I agree", variant="primary", elem_id="iir-agree")
                decline_btn = gr.Button("I do not agree", elem_id="iir-decline")
        with gr.Column(visible=False, elem_id="iir-study-brief") as pg_brief:
            with gr.Row(equal_height=False):
                brief_target = gr.HTML("", js_on_load=None, min_width=220, elem_id="iir-study-brief-target")
                brief = gr.Markdown("", elem_id="iir-study-brief-text")
            start_btn = gr.Button("Start searching", variant="primary", elem_id="iir-start-task")
        with gr.Column(visible=False, elem_id="iir-study-search") as pg_search:
            with gr.Row(equal_height=False):
                with gr.Column(scale=1, min_width=220):
                    search_target = gr.HTML("", js_on_load=None, elem_id="iir-study-target")
                    budget = gr.HTML("", js_on_load=timer_js, elem_id="iir-study-budget")
                    give_up_btn = gr.Button("Give up", variant="stop", elem_id="iir-give-up")
                    with gr.Group(visible=False, elem_id="iir-give-up-confirm") as g_confirm:
                        gr.Markdown("**End this task without finding the image?**")
                        with gr.Row():
                            give_up_yes = gr.Button("Yes, end the task", variant="stop", size="sm",
                                                    elem_id="iir-give-up-yes")
                            give_up_no = gr.Button("Keep searching", size="sm", elem_id="iir-give-up-no")
                with gr.Column(scale=3, min_width=320):
                    desc = gr.Textbox(label="Describe the image you are looking for", elem_id="iir-desc",
                                      max_lines=4, submit_btn="Search")
                    with gr.Group(visible=False) as g_conv:
                        question = gr.HTML("", js_on_load=cards_js, elem_id="iir-dialogue")
                        answer_box = gr.Textbox(label="Your answer", elem_id="iir-answer", max_lines=4,
                                                submit_btn="Answer")
                        skip_btn = gr.Button("Skip question", size="sm", elem_id="iir-skip")
                    fb_btn = gr.Button("More like my marks", variant="primary", visible=False, elem_id="iir-feedback")
                    with gr.Group(visible=False) as g_comp:
                        reference = gr.HTML("", js_on_load=None, elem_id="iir-reference")
                        caption_box = gr.Textbox(label="How does your image differ from the reference?",
                                                 elem_id="iir-caption", max_lines=4, submit_btn="Search")
                    query_box = gr.Textbox(label="Search again with new words", visible=False, elem_id="iir-query",
                                           max_lines=4, submit_btn="Search")
            gr.HTML(WORKING, js_on_load=None, elem_id="iir-working")
            results = gr.HTML("", elem_id="iir-results", js_on_load=cards_js, min_height=120)
        forms: dict[str, tuple] = {}  # form -> (column, title, inputs, submit button)
        for form in ("task", "condition", "end"):
            items = study.form(form)
            if not items:
                continue
            with gr.Column(visible=False, elem_id=f"iir-study-form-{form}") as col:
                title = gr.Markdown(form_title(form, None))
                inputs = [_form_input(gr, q) for q in items]
                btn = gr.Button("Submit and continue", variant="primary",
                                elem_id="iir-submit" if form == "task" else f"iir-submit-{form}")
            forms[form] = (col, title, inputs, btn)
        with gr.Column(visible=False, elem_id="iir-study-done") as pg_done:
            done_md = gr.Markdown("", elem_id="iir-study-end")
            leave_btn = gr.Button("Next participant", size="sm", elem_id="iir-leave",
                                  visible=study.recruitment.platform == "none")

        pages = {"start": pg_start, "briefing": pg_brief, "search": pg_search, "done": pg_done, "declined": pg_done,
                 "screened_out": pg_done}
        form_inputs = [c for f in forms.values() for c in f[2]]
        outputs = [token_store, tab_state, header, status, pg_start, consent_row, pg_brief, pg_search, pg_done,
                   consent_md, brief, brief_target, search_target, budget, desc, g_conv, question, answer_box, fb_btn,
                   g_comp, reference, caption_box, query_box, results, give_up_btn, g_confirm, done_md,
                   *[f[0] for f in forms.values()], *[f[1] for f in forms.values()], *form_inputs]

        def render(token: str, tab: TabState, clear: tuple = ()) -> dict:
            v = page.view(token, tab)
            if v.status.startswith("⚠️"):
                gr.Warning(v.status[2:].strip())
            out = {token_store: token, tab_state: tab, header: v.header, status: v.status,
                   consent_row: gr.update(visible=v.can_join),
                   consent_md: v.consent or study.consent, brief: v.brief, brief_target: v.brief_target,
                   search_target: v.search_target, budget: v.budget,
                   desc: gr.update(visible=v.show_describe), g_conv: gr.update(visible=v.show_conversation),
                   question: v.question, answer_box: gr.update(visible=v.show_answer),
                   fb_btn: gr.update(visible=v.show_feedback),
                   g_comp: gr.update(visible=v.show_composed), reference: v.reference,
                   query_box: gr.update(visible=v.show_text), results: v.results,
                   give_up_btn: gr.update(value=v.give_up_label, visible=not v.confirm_give_up),
                   g_confirm: gr.update(visible=v.confirm_give_up), done_md: v.done}
            shown = pages.get(v.phase)
            for pg in set(pages.values()):
                out[pg] = gr.update(visible=pg is shown)
            for form, (col, title, inputs, _) in forms.items():
                out[col] = gr.update(visible=v.phase == "questionnaire" and v.form == form)
                out[title] = v.form_title if v.form == form else form_title(form, None)
                if not (v.phase == "questionnaire" and v.form == form):
                    for comp in inputs:
                        out[comp] = None
            for box in clear:  # keep any visibility update of the box
                upd = out.get(box)
                out[box] = gr.update(**{**(upd if isinstance(upd, dict) else {}), "value": ""})
            return out

        def handler(name: str, clear: tuple = (), n_args: int = 0):
            def fn(token, tab, *rest):
                *args, ts = rest
                token, tab = page.act(name, token, tab, *args[:n_args], client_ts=ts)
                return render(token, tab, clear if not tab.notice.startswith("⚠️") else ())

            fn.__name__ = f"on_{name}"
            return fn

        def on_load(token, tab, ts, request: gr.Request):
            page.arrive(tab, dict(request.query_params) if request is not None else {})
            if page.who(token, tab):
                token, tab = page.act("resume", token, tab, client_ts=ts)
            return render(token or "", tab)

        def on_ask(token, tab, ts):
            token, tab = page.act("ask", token, tab, client_ts=ts)
            return render(token, tab)

        def on_card(token, tab, ts, evt: gr.EventData):
            data = getattr(evt, "_data", None) or {}
            token, tab = page.act("card", token, tab, str(data.get("action", "")), str(data.get("id", "")),
                                  client_ts=ts)
            return render(token, tab)

        def on_choose(token, tab, ts, evt: gr.EventData):
            """A click on one of the pending question's options (a thumbnail, none of these, yes/no)."""
            data = getattr(evt, "_data", None) or {}
            token, tab = page.act("choose", token, tab, data.get("index"), str(data.get("question") or ""),
                                  data.get("round"), client_ts=ts)
            return render(token, tab)

        def submitter(form: str):
            items = study.form(form)

            def on_submit(token, tab, *rest):
                *values, ts = rest
                answers = {q.id: v for q, v in zip(items, values)}
                token, tab = page.act("submit", token, tab, answers, client_ts=ts)
                return render(token, tab)

            return on_submit

        base = [token_store, tab_state]
        search = {"concurrency_id": "search", "trigger_mode": "once", "show_progress": "hidden", "js": BUSY_JS}
        quick = {"trigger_mode": "once", "show_progress": "hidden", "js": CLOCK_JS}
        asking = {"concurrency_id": "model", "show_progress": "hidden", "js": CLOCK_JS}

        def with_question(event):  # results first; then the system's question (the slow LLM step)
            event.then(None, None, None, js=IDLE_JS).then(on_ask, [*base, clock], outputs, **asking)

        demo.load(on_load, [*base, clock], outputs, js=CLOCK_JS, show_progress="hidden").then(
            on_ask, [*base, clock], outputs, **asking)
        agree_btn.click(lambda t, tab, ts: render(*page.act("join", t, tab, True, client_ts=ts)),
                        [*base, clock], outputs, **quick)
        decline_btn.click(lambda t, tab, ts: render(*page.act("join", t, tab, False, client_ts=ts)),
                          [*base, clock], outputs, **quick)
        start_btn.click(handler("start"), [*base, clock], outputs, **quick)
        with_question(desc.submit(handler("describe", (desc,), 1), [*base, desc, clock], outputs, **search))
        with_question(answer_box.submit(handler("answer", (answer_box,), 1), [*base, answer_box, clock], outputs,
                                        **search))
        with_question(skip_btn.click(handler("skip"), [*base, clock], outputs, **search))
        with_question(fb_btn.click(handler("feedback"), [*base, clock], outputs, **search))
        with_question(caption_box.submit(handler("relative", (caption_box,), 1), [*base, caption_box, clock], outputs,
                                         **search))
        with_question(query_box.submit(handler("search", (query_box,), 1), [*base, query_box, clock], outputs,
                                       **search))
        with_question(question.click(on_choose, [*base, clock], outputs, **search))
        results.click(on_card, [*base, clock], outputs, **quick)
        budget.click(on_card, [*base, clock], outputs, **quick)  # the timer reports {action: "timeout"}
        give_up_btn.click(handler("give_up"), [*base, clock], outputs, **quick)
        give_up_yes.click(handler("give_up_yes"), [*base, clock], outputs, **quick)
        give_up_no.click(handler("give_up_no"), [*base, clock], outputs, **quick)
        for form, (_, _, inputs, btn) in forms.items():
            btn.click(submitter(form), [*base, *inputs, clock], outputs, **quick)
        leave_btn.click(handler("leave"), [*base, clock], outputs, **quick)

    from interactive_ir.study.admin_ui import add_admin_page

    add_admin_page(demo, page, password)
    return demo
