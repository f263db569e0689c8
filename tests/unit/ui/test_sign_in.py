"""Sign in with Hugging Face (issue 27 D1): whose token a visitor's model steps use, against a local
OpenAI-compatible stand-in for the router on 127.0.0.1 that records the Authorization header."""

from __future__ import annotations

import pytest
from app_server import start_app, stop_app
from iir_testutils import query_modes
from llm_standin import StandInLLM

from interactive_ir.backends import make_llm
from interactive_ir.backends.visitor_llm import (
    BudgetSpent,
    HourlyBudget,
    LLMAccess,
    SignInConfig,
    SignInUnavailable,
    sign_in_config,
    visitor_key,
)
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.ui import handlers as h
from interactive_ir.ui import signin, work
from interactive_ir.ui.state import UIState

OWNER = "hf_owner_token"
VISITOR = "hf_visitor_token"
REVOKED = "hf_revoked_token"


class Token:  # what Gradio hands a listener (gr.OAuthToken's fields)
    def __init__(self, token: str, expires_at: int = 0):
        self.token, self.scope, self.expires_at = token, "inference-api", expires_at


class Req:  # a gr.Request's address
    def __init__(self, host: str, forwarded: str = ""):
        self.client = type("C", (), {"host": host})()
        self.headers = {"x-forwarded-for": forwarded} if forwarded else {}


@pytest.fixture
def router(monkeypatch):
    srv = StandInLLM(refused=(REVOKED,))
    url = srv.start()
    monkeypatch.setenv("HF_TOKEN", OWNER)
    for k in ("IIR_LLM_DEADLINE_S", "IIR_LLM_MAX_RETRIES"):
        monkeypatch.delenv(k, raising=False)
    yield srv, url
    srv.stop()


@pytest.fixture
def engine(router, tiny_index):
    llm = make_llm(f"hf-router:org/model@{router[1]}", max_retries=0)
    return build_engine(tiny_index[0], llm=llm, config=EngineConfig(k=4), belief=query_modes())  # LLM questions


def ask(engine, access, budget=None, st: UIState | None = None):
    """A search, then its "ask" step as the page runs it for a visitor with `access`."""
    st = st or h.start(engine, UIState(), "a red dog on the beach", later=True)
    job = work.claim(st)
    assert job is not None and job.step == "ask"
    work.adopt(engine, st, job, work.run_as(engine, job, access, budget))
    return st


SPACE = {"SYSTEM": "spaces", "SPACE_ID": "alice/search"}  # on a Space, Gradio signs visitors in itself


def on(**kw) -> signin.SignIn:
    return signin.sign_in_for(None, SignInConfig(sign_in="on", **kw), environ=SPACE)


# --- who gets which LLM -----------------------------------------------------------------------------------
def test_a_signed_in_visitors_questions_use_their_own_token_never_the_owners(engine, router):
    srv, _ = router
    st = ask(engine, signin.access_for(on(), Token(VISITOR)))
    assert st.session.pending_question and st.session.question.kind == "llm"
    assert srv.auths and set(srv.auths) == {f"Bearer {VISITOR}"}
    saved = st.session.to_json()
    assert VISITOR not in saved and VISITOR not in repr(LLMAccess("own", VISITOR))  # never in the session


def test_without_sign_in_every_visitor_uses_the_owners_llm_as_before(engine, router):
    srv, _ = router
    assert signin.access_for(None, Token(VISITOR)) is None  # sign-in off: no routing at all
    ask(engine, None)
    assert set(srv.auths) == {f"Bearer {OWNER}"}


def test_an_anonymous_visitor_gets_picture_questions_and_no_model_call(engine, router):
    srv, _ = router
    access = signin.access_for(on(), None, Req("10.0.0.1"))
    assert access.kind == "none"
    st = ask(engine, access)
    assert st.session.pending_question and st.session.question.grounded
    assert srv.auths == []


def test_an_expired_token_counts_as_not_signed_in():
    assert signin.access_for(on(), Token(VISITOR, expires_at=1)).kind == "none"


def test_anonymous_visitors_use_the_owners_token_within_the_budget_then_picture_questions(engine, router):
    srv, _ = router
    ask(engine, None)
    per_question = len(srv.auths)  # the model calls of one question
    srv.auths.clear()
    s = on(anon_llm=True, anon_calls_per_visitor=per_question, anon_calls_per_hour=100)
    s = signin.SignIn(s.config, s.budget, has_llm=True, owner_keyed=True)
    access = signin.access_for(s, None, Req("10.0.0.1"))
    assert access.kind == "owner" and access.visitor == visitor_key("10.0.0.1") and "10.0.0.1" not in repr(access)
    st = ask(engine, access, s.budget)
    assert st.session.question.kind == "llm" and set(srv.auths) == {f"Bearer {OWNER}"}
    assert len(srv.auths) == per_question and s.budget.left(access.visitor) == 0
    st = ask(engine, access, s.budget, h.start(engine, UIState(), "a dog in the snow", later=True))
    assert st.session.question.grounded and "used up" in st.notice  # spent: a picture question, and why
    assert len(srv.auths) == per_question  # no call past the budget
    forged = signin.access_for(s, None, Req("10.0.0.1", forwarded="192.0.2.7"))  # a forged header: the same one
    assert forged.visitor == access.visitor and s.budget.left(forged.visitor) == 0
    other = signin.access_for(s, None, Req("10.0.0.2"))  # another visitor still can
    assert other.visitor != access.visitor and s.budget.left(other.visitor) == per_question


def test_a_revoked_token_mid_session_says_so_and_the_search_goes_on_without_the_llm(engine, router):
    srv, _ = router
    st = ask(engine, signin.access_for(on(), Token(REVOKED)))
    assert f"Bearer {REVOKED}" in srv.auths and f"Bearer {OWNER}" not in srv.auths
    assert st.session.pending_question and st.session.question.grounded  # a picture question instead
    assert "sign in again" in st.notice and REVOKED not in st.notice
    assert not engine.llm.breaker.is_open and engine.llm.breaker.last_error == ""  # the Space's LLM is not paused
    st = ask(engine, None, st=h.start(engine, UIState(), "a cat", later=True))  # others are not affected
    assert st.session.question.kind == "llm"


# --- the budget and the settings --------------------------------------------------------------------------
def test_the_budget_counts_per_visitor_and_in_total_over_a_sliding_hour():
    now = [0.0]
    b = HourlyBudget(per_visitor=2, total=3, clock=lambda: now[0])
    b.take("a")
    b.take("a")
    with pytest.raises(BudgetSpent, match="your share"):
        b.take("a")
    b.take("b")
    with pytest.raises(BudgetSpent, match="all|visitors who are not signed in"):
        b.take("c")
    assert b.left("c") == 0
    now[0] = 3601.0  # an hour later the calls no longer count
    assert b.left("a") == 2
    b.take("a", 2)


def test_settings_come_from_the_environment_and_auto_follows_the_spaces_oauth():
    cfg = sign_in_config(environ={"IIR_ANON_LLM": "on", "IIR_ANON_CALLS_PER_VISITOR": "5"})
    assert cfg.anon_llm and cfg.anon_calls_per_visitor == 5 and cfg.sign_in == "auto"
    assert not cfg.enabled({}) and cfg.enabled({"OAUTH_CLIENT_ID": "abc"})
    assert not SignInConfig(sign_in="off").enabled({"OAUTH_CLIENT_ID": "abc"})
    with pytest.raises(ValueError, match="IIR_SIGN_IN"):
        sign_in_config(environ={"IIR_SIGN_IN": "maybe"})


def test_sign_in_off_a_space_without_a_hugging_face_login_is_refused_with_what_to_do(monkeypatch, tmp_path):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    import huggingface_hub.constants

    # no token saved by `hf auth login` either (the library read its path once, at import, from HF_HOME)
    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(tmp_path / "no-login" / "token"))
    with pytest.raises(SignInUnavailable, match="hf auth login.*IIR_SIGN_IN=off"):
        signin.sign_in_for(None, SignInConfig(sign_in="on"), environ={})
    assert signin.sign_in_for(None, SignInConfig(sign_in="on"), environ=SPACE) is not None
    assert signin.sign_in_for(None, SignInConfig(sign_in="auto"), environ={}) is None  # off a Space: off


def test_the_page_says_which_applies():
    s = on()
    s = signin.SignIn(s.config, s.budget, has_llm=True, owner_keyed=True)
    assert "your own account" in signin.note(s, "ada") and "ada" in signin.note(s, "ada")
    assert "picture questions" in signin.note(s) and "Sign in" in signin.note(s)
    anon = signin.SignIn(SignInConfig(sign_in="on", anon_llm=True, anon_calls_per_visitor=7), s.budget, True, True)
    assert "up to 7 model calls an hour" in signin.note(anon)



# --- the whole path: `python app.py --sign-in on` with Gradio's local mock of the sign-in -------------------
def serve_app(tmp_path, env_extra: dict, *flags: str):
    """`python app.py` on the demo gallery (fake:32 embedder) at a free port: (process, URL, log path)."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("IIR_", "OAUTH_", "SPACE_", "HF_"))}
    env.update(IIR_BELIEF_ON_PAGE="0", IIR_EMBEDDER="fake:32", IIR_INDICES_DIR=str(tmp_path / "ind"), IIR_CACHE_DIR=str(tmp_path / "cache"),
               GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1", HF_HOME=str(tmp_path / "hf"), **env_extra)
    log = tmp_path / "app.log"
    proc, url = start_app(list(flags), env, log)
    return proc, url.rstrip("/"), log


def elem_ids(config: dict) -> set[str]:
    """The elem_id of every component of a served page (its /config)."""
    return {c.get("props", {}).get("elem_id") for c in config.get("components", [])} - {None}


def test_the_app_signs_a_visitor_in_with_gradios_mock_and_routes_their_token(tmp_path):
    """Off a Space, Gradio mocks "Sign in with Hugging Face" with the machine's own login (HF_TOKEN, checked
    with the Hub's whoami: here the stand-in Hub) and hands listeners its mock token. The signed-in visitor's
    question reaches the router stand-in with that token; an anonymous one's makes no model call."""
    import httpx
    from gradio_client import Client
    from hub_standin import StandInHub

    hub, llm = StandInHub(OWNER), StandInLLM()
    hub_url, llm_url = hub.start(), llm.start()
    proc, url, log = serve_app(tmp_path, {"HF_ENDPOINT": hub_url, "HF_TOKEN": OWNER,
                                          "IIR_LLM": f"hf-router:org/model@{llm_url}"}, "--sign-in", "on")
    try:
        assert "iir-login" in elem_ids(httpx.get(f"{url}/config").json())  # the page has the button
        login = httpx.get(f"{url}/login/huggingface", follow_redirects=False)
        back = httpx.get(url + login.headers["location"], follow_redirects=False)  # the mock's callback
        cookie = back.headers["set-cookie"].split(";")[0]  # Secure: httpx would not send it back over http

        anon = Client(url, verbose=False)
        assert "Not signed in" in anon.predict(api_name="/sign_in_note")
        anon.predict("a red dog on the beach", api_name="/start")
        assert "System asks" in str(anon.predict(api_name="/start_model"))  # a picture question
        assert llm.auths == []  # anonymous, IIR_ANON_LLM off: no model call

        signed = Client(url, headers={"Cookie": cookie}, verbose=False)
        assert "Signed in as **standin-user**" in signed.predict(api_name="/sign_in_note")
        signed.predict("a red dog on the beach", api_name="/start")
        assert "System asks" in str(signed.predict(api_name="/start_model"))
        assert llm.auths and set(llm.auths) == {"Bearer mock-oauth-token-for-local-dev"}  # theirs, never OWNER's
        assert "mock-oauth-token-for-local-dev" not in log.read_text()  # never logged
    finally:
        stop_app(proc)
        hub.stop()
        llm.stop()


def session_cookie(value: str, change) -> str:
    """A Gradio sign-in session cookie ("session=...") with `change(session)` applied, signed again the way
    Starlette's SessionMiddleware signs it, with the key Gradio gives it off a Space (gradio/oauth.py
    `attach_oauth`: sha256 of OAUTH_CLIENT_SECRET, here unset, + "-v4")."""
    import base64
    import hashlib
    import json

    import itsdangerous

    signer = itsdangerous.TimestampSigner(hashlib.sha256(b"-v4").hexdigest())
    name, _, data = value.partition("=")
    try:
        session = json.loads(base64.b64decode(signer.unsign(data.encode())))
    except itsdangerous.BadSignature as e:  # Gradio changed its session key: see gradio/oauth.py attach_oauth
        raise AssertionError(f"Gradio's session cookie is not signed as this test expects ({e})") from e
    change(session)
    return f"{name}={signer.sign(base64.b64encode(json.dumps(session).encode())).decode()}"


def test_a_session_past_its_expiry_is_an_expired_sign_in_not_an_anonymous_visitor():
    """What Gradio keeps for a signed-in visitor (request.session["oauth_info"]), read from a gr.Request."""
    import time

    import gradio as gr
    from starlette.requests import Request as HTTPRequest

    def request(info):
        return gr.Request(HTTPRequest({"type": "http", "headers": [], "session": {"oauth_info": info} if info else {}}))

    user = {"preferred_username": "ada"}
    v = signin.visitor_of(request({"access_token": VISITOR, "expires_at": int(time.time()) + 60, "userinfo": user}))
    assert (v.user, v.token, v.expired) == ("ada", VISITOR, False) and VISITOR not in repr(v)
    v = signin.visitor_of(request({"access_token": VISITOR, "expires_at": int(time.time()) - 60, "userinfo": user}))
    assert (v.user, v.token, v.expired) == ("ada", "", True)
    assert signin.access_for(on(), v).kind == "none"  # no model call with a token that expired
    assert signin.visitor_of(request(None)) == signin.Visitor() and signin.visitor_of(None) == signin.Visitor()
    assert signin.note(on(), "ada", expired=True).startswith(signin.EXPIRED) and "picture questions" in signin.note(
        on(), expired=True)


def test_an_expired_sign_in_is_said_in_plain_words_while_picture_questions_go_on(tmp_path):
    """Gradio's local mock signs the visitor in; the same session with its expiry an hour ago (as a visitor
    who signed in yesterday comes back) makes the page say the sign-in has expired, and the search goes on with
    picture questions: no model call, with their token or the owner's."""
    import time

    import httpx
    from gradio_client import Client
    from hub_standin import StandInHub

    hub, llm = StandInHub(OWNER), StandInLLM()
    hub_url, llm_url = hub.start(), llm.start()
    proc, url, log = serve_app(tmp_path, {"HF_ENDPOINT": hub_url, "HF_TOKEN": OWNER,
                                          "IIR_LLM": f"hf-router:org/model@{llm_url}"}, "--sign-in", "on")
    try:
        login = httpx.get(f"{url}/login/huggingface", follow_redirects=False)
        back = httpx.get(url + login.headers["location"], follow_redirects=False)
        cookie = back.headers["set-cookie"].split(";")[0]
        expired = session_cookie(cookie, lambda s: s["oauth_info"].update(expires_at=int(time.time()) - 3600))

        visitor = Client(url, headers={"Cookie": expired}, verbose=False)
        note = visitor.predict(api_name="/sign_in_note")
        assert "Your Hugging Face sign-in has expired: sign in again to use your own model quota" in note
        assert "Not signed in" not in note and "Signed in as" not in note
        visitor.predict("a red dog on the beach", api_name="/start")
        shown = str(visitor.predict(api_name="/start_model"))
        assert "System asks" in shown and "sign-in has expired" in shown  # a picture question, and why
        assert llm.auths == []  # no model call: not with the expired token, not with the owner's
        assert "mock-oauth-token-for-local-dev" not in log.read_text()  # never logged

        fresh = Client(url, headers={"Cookie": cookie}, verbose=False)  # signing in again: their own quota
        assert "Signed in as **standin-user**" in fresh.predict(api_name="/sign_in_note")
    finally:
        stop_app(proc)
        hub.stop()
        llm.stop()


# --- a study that recruits on Hugging Face ------------------------------------------------------------------
def test_a_study_can_require_sign_in_and_records_the_user_name_as_the_recruitment_id(tiny_index, tmp_path):
    from interactive_ir.backends.llms import FakeLLM
    from interactive_ir.study.config import parse_study
    from interactive_ir.study.log import StudyLog
    from interactive_ir.study.page.logic import StudyPage
    from interactive_ir.study.page.render import TabState
    from interactive_ir.study.ui import make_runner

    r, ids, _ = tiny_index
    study = parse_study({"study_id": "hf", "rounds": 1, "k": 4, "conditions": {"F": "feedback"}, "tasks": ids[:1],
                         "recruitment": {"platform": "huggingface", "completion_code": "DONE1"}})
    page = StudyPage(make_runner(build_engine(r, llm=FakeLLM()), study, StudyLog(tmp_path / "s.sqlite")), [])
    anon = TabState()
    page.arrive(anon, {})  # not signed in: told to sign in, and cannot join
    assert "sign in with Hugging Face" in anon.link_error and not page.view("", anon).can_join
    token, anon = page.act("join", "", anon, True)
    assert not token
    tab = TabState()
    page.arrive(tab, {"PROLIFIC_PID": "someone-else"}, hf_user="ada-lovelace")
    assert tab.link_error == "" and page.view("", tab).can_join
    token, tab = page.act("join", "", tab, True)
    p = page.runner.progress(page.who(token, tab))
    assert p.recruit["id"] == "ada-lovelace" and p.recruit["platform"] == "huggingface"
    again = TabState()  # the same person in another browser is refused: one person, one participation
    page.arrive(again, {}, hf_user="ada-lovelace")
    token2, again = page.act("join", "", again, True)
    assert not token2 and "already started" in again.notice
    page.arrive(TabState(), {}, hf_user="bad name!")  # never raises: a plain message instead


def test_the_study_page_of_a_hugging_face_study_has_the_sign_in_button(tmp_path):
    """`python app.py --study FILE` with `recruitment: huggingface` (Gradio's mock checks this machine's login
    with the stand-in Hub's whoami): the page has the button; a lab study's page has none."""
    import httpx
    from hub_standin import StandInHub

    hub = StandInHub(OWNER)
    hub_url = hub.start()
    try:
        for platform, expected in (("huggingface", True), ("none", False)):
            f = tmp_path / f"{platform}.yaml"
            f.write_text(f"study_id: s{platform}\nconditions: {{A: feedback}}\ntasks: [animals_three-eyes_0001.png]\n"
                         f"recruitment: {{platform: {platform}, completion_code: C1}}\n")
            proc, url, log = serve_app(tmp_path / platform, {"HF_ENDPOINT": hub_url, "HF_TOKEN": OWNER, "IIR_LLM": "none",
                                                             "IIR_STUDY_DIR": str(tmp_path / "data")}, "--study", str(f))
            try:
                assert ("iir-study-login" in elem_ids(httpx.get(f"{url}/config").json())) is expected, \
                    log.read_text()[-2000:]
            finally:
                stop_app(proc)
    finally:
        hub.stop()
