"""`python -m interactive_ir chat`: the terminal conversation, driven through stdin."""

from __future__ import annotations

import io
import json

import pytest

from interactive_ir import cli
from interactive_ir.backends.llms import FakeLLM
from interactive_ir.commands.chat_cmd import Chat
from interactive_ir.engine import Engine, EngineConfig


def run_chat(monkeypatch, capsys, args, lines):
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{x}\n" for x in lines)))
    rc = cli.main(["chat", *args])
    return rc, capsys.readouterr()


def results(out: str) -> list[list[str]]:
    """The result lists printed, each as [path, ...] in order."""
    lists, cur = [], None
    for line in out.splitlines():
        if line.startswith("round "):
            cur = []
            lists.append(cur)
        elif cur is not None and line.startswith("  ") and ". " in line:
            cur.append(line.split(". ", 1)[1].split("  ")[0])
    return lists


def test_chat_answers_and_found(tiny_index, monkeypatch, capsys, tmp_path):
    r, ids, caps = tiny_index
    save = tmp_path / "session.json"
    rc, out = run_chat(monkeypatch, capsys,
                       ["--index", str(r.index.path), "--llm", "fake", "-k", "3", "--save", str(save)],
                       ["a red dog on the beach", "it is brown", "/skip", "/found 9", "/found 2"])
    assert rc == 0
    text = out.out
    assert "Describe the image you are looking for:" in text
    assert text.count("\nQ: ") == 3  # a question after the description, the answer and the skip
    pages = results(text)
    assert len(pages) == 3 and all(len(p) == 3 for p in pages)
    assert all(p.startswith(str(r.index.image_root)) for page in pages for p in page)
    assert "there is no result 9: the last list has 3" in text
    found = pages[-1][1].removeprefix(str(r.index.image_root) + "/")
    assert f"found {found} in round 2 at rank 2" in text
    s = json.loads(save.read_text())
    assert [t["kind"] for t in s["turns"]] == ["describe", "answer", "skip"]
    assert s["found"]["id"] == found and s["found"]["rank"] == 2
    assert s["turns"][1]["answered_question"] == s["turns"][0]["question"]


def test_chat_quit_and_eof(tiny_index, monkeypatch, capsys):
    r, ids, caps = tiny_index
    rc, out = run_chat(monkeypatch, capsys, ["--index", str(r.index.path), "--llm", "fake",
                                             "--description", "a cat", "--method", "zs"], ["/quit"])
    assert rc == 0 and "round 0 (describe) query: a cat" in out.out and out.out.rstrip().endswith("bye")
    rc, out = run_chat(monkeypatch, capsys, ["--index", str(r.index.path), "--llm", "fake"], [])
    assert rc == 0  # EOF before any description


def test_chat_reports_errors_and_goes_on(tiny_index, monkeypatch, capsys):
    r, ids, caps = tiny_index
    rc, out = run_chat(monkeypatch, capsys, ["--index", str(r.index.path), "--llm", "none", "-k", "2",
                                             "--questioner", "llm"],
                       ["   ", "a red dog", "yes", "/found x", "/bogus", "/help", "/skip", "/found 1"])
    text = out.out
    assert rc == 0
    assert "(no LLM: the system will not ask questions)" in text
    assert "error: the description is empty" in text  # then asked again
    assert "error: there is no question to answer" in text
    assert "give the result's number (1 to 2)" in text and "unknown command /bogus" in text
    assert "/ref N TEXT" in text  # the help
    assert "found " in text and "in round 1 at rank 1" in text


def test_chat_rejects_bad_options(tiny_index, monkeypatch, capsys):
    r, ids, caps = tiny_index
    with pytest.raises(SystemExit) as e:  # refused by the parser: -k takes 1 to 1000
        run_chat(monkeypatch, capsys, ["--index", str(r.index.path), "--llm", "fake", "-k", "0"], [])
    assert e.value.code == 2 and "argument -k: 0 is out of range" in capsys.readouterr().err
    rc, out = run_chat(monkeypatch, capsys, ["--index", str(r.index.path / "nope"), "--llm", "fake"], [])
    assert rc == 1 and "no index at" in out.err


def test_like_unlike_ref_call_the_engine(tiny_index):
    r, ids, caps = tiny_index
    calls = []

    class Recording(Engine):
        def feedback(self, session, relevant, irrelevant=(), method=None):
            calls.append(("feedback", list(relevant), list(irrelevant)))
            return self.search_text(session, session.current_query, kind="feedback")

        def relative(self, session, caption, reference=None, image=None, method=None):
            calls.append(("relative", caption, reference))
            return self.search_text(session, caption, kind="relative")

    eng = Recording(r, llm=FakeLLM(), config=EngineConfig(k=3))
    out = io.StringIO()
    chat = Chat(eng, io.StringIO("/like 2\n/unlike 1\n/ref 3 but blue\n/ref 3\n/quit\n"), out)
    chat.run("a red dog")
    shown = [t.shown for t in chat.session.turns]
    assert calls == [("feedback", [shown[0][1]], []), ("feedback", [], [shown[1][0]]),
                     ("relative", "but blue", shown[2][2])]
    assert "usage: /ref N TEXT" in out.getvalue()


def test_like_takes_several_results_and_bad_numbers_change_nothing(tiny_index):
    r, ids, caps = tiny_index
    calls = []

    class Recording(Engine):
        def feedback(self, session, relevant, irrelevant=(), method=None):
            calls.append((list(relevant), list(irrelevant)))
            return self.search_text(session, session.current_query, kind="feedback")

    eng = Recording(r, llm=FakeLLM(), config=EngineConfig(k=3))
    out = io.StringIO()
    chat = Chat(eng, io.StringIO("/like 1 3\n/unlike 2,3\n/like 1 7\n/like\n/quit\n"), out)
    chat.run("a red dog")
    shown = [t.shown for t in chat.session.turns]
    assert calls == [([shown[0][0], shown[0][2]], []), ([], [shown[1][1], shown[1][2]])]
    assert len(chat.session.turns) == 3  # "/like 1 7" and a bare "/like" ran no round
    assert "there is no result 7" in out.getvalue() and "e.g. /like 2" in out.getvalue()


def test_chat_builds_the_captioner_and_vlm_from_flags_or_env(tiny_index, monkeypatch, capsys):
    from interactive_ir.commands import chat_cmd

    r, ids, caps = tiny_index
    seen = {}
    monkeypatch.setattr(chat_cmd.Chat, "run", lambda self, d=None: seen.update(
        captioner=self.engine.captioner, vlm=self.engine.vlm) or 0)
    monkeypatch.setenv("IIR_VLM", "fake")
    rc, _ = run_chat(monkeypatch, capsys, ["--index", str(r.index.path), "--llm", "none", "--captioner", "fake"], [])
    assert rc == 0 and seen["captioner"].spec == "fake" and seen["vlm"].spec == "fake"


def test_like_and_ref_without_those_modes_say_so(tiny_index):
    r, ids, caps = tiny_index

    class ConversationOnly:
        """An engine without the feedback and composed modes (a front-end may get one)."""

        mode_names = ("conversation", "text")  # what it declares (registry.offered)

        def __init__(self, engine):
            self._engine = engine

        def __getattr__(self, name):
            if name in ("feedback", "relative"):
                raise AttributeError(name)
            return getattr(self._engine, name)

    eng = ConversationOnly(Engine(r, llm=FakeLLM(), config=EngineConfig(k=3)))
    out = io.StringIO()
    chat = Chat(eng, io.StringIO("/like 1\n/ref 1 but red\n/quit\n"), out)
    assert chat.run("a red dog") == 0
    text = out.getvalue()
    assert "relevance feedback (/like, /unlike) is not available" in text
    assert "composed search (/ref) is not available" in text
    assert len(chat.session.turns) == 1


@pytest.mark.parametrize("flag,value", [("--method", "magic"), ("--question-style", "poem")])
def test_chat_rejects_unknown_choices(tiny_index, monkeypatch, capsys, flag, value):
    r, ids, caps = tiny_index
    with pytest.raises(SystemExit):
        run_chat(monkeypatch, capsys, ["--index", str(r.index.path), "--llm", "fake", flag, value], [])


def test_chat_lists_the_options_of_a_grounded_question_and_a_number_chooses(tiny_index, monkeypatch, capsys):
    r, ids, caps = tiny_index
    rc, out = run_chat(monkeypatch, capsys, ["--index", str(r.index.path), "--llm", "none", "-k", "2"],
                       ["a red dog", "9", "2", "it is red", "/found 1"])
    text = out.out
    assert rc == 0 and "type the option's number" in text
    assert "Q: Which is closest to your image?" in text and "  [1] " in text and "none of these" in text
    assert "there is no option 9" in text
    assert "round 1 (answer)" in text and "round 2 (answer)" in text  # "2" chose, "it is red" was typed
    assert "in round 2 at rank 1" in text


def test_chat_marks_results_seen_in_an_earlier_round(tiny_index, monkeypatch, capsys):
    r, ids, caps = tiny_index
    rc, out = run_chat(monkeypatch, capsys, ["--index", str(r.index.path), "--llm", "fake", "-k", "4"],
                       ["a red dog on the beach", "a red dog on the beach", "/quit"])
    lists = results(out.out)
    again = [line for line in out.out.splitlines() if line.endswith("(seen before)")]
    assert rc == 0 and len(lists) == 2 and again and len(again) == len(set(lists[0]) & set(lists[1]))


def test_chat_hide_seen_from_the_flag_or_env(tiny_index, monkeypatch, capsys):
    from interactive_ir.commands import chat_cmd

    r, ids, caps = tiny_index
    seen = {}
    monkeypatch.setattr(chat_cmd.Chat, "run", lambda self, d=None: seen.update(hide=self.engine.config.hide_seen) or 0)
    run_chat(monkeypatch, capsys, ["--index", str(r.index.path), "--llm", "none"], [])
    assert seen["hide"] is False
    run_chat(monkeypatch, capsys, ["--index", str(r.index.path), "--llm", "none", "--hide-seen"], [])
    assert seen["hide"] is True
    monkeypatch.setenv("IIR_HIDE_SEEN", "1")
    run_chat(monkeypatch, capsys, ["--index", str(r.index.path), "--llm", "none"], [])
    assert seen["hide"] is True


def test_closest_and_none_move_the_belief(tiny_index):
    r, ids, caps = tiny_index
    eng = Engine(r, llm=FakeLLM(), config=EngineConfig(k=3))
    out = io.StringIO()
    chat = Chat(eng, io.StringIO("/closest 2 but blue\n/none\n/closest 9\n/quit\n"), out)
    chat.run("a red dog")
    turns = chat.session.turns
    assert [t.kind for t in turns] == ["describe", "closest", "closest"]
    assert turns[1].extra["clicked"] == turns[0].shown[1] and turns[1].extra["said"] == "but blue"
    assert turns[2].extra["clicked"] is None
    seen = [i for t in turns for i in t.shown]
    assert len(seen) == len(set(seen))  # each page unseen images
    assert "there is no result 9: the last list has 3" in out.getvalue()  # and nothing changed
