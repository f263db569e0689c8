"""The command line keeps third-party chatter (sentence-transformers' INFO lines, weight-loading bars) off unless
-v (issue 39)."""

from __future__ import annotations

import logging

import pytest

from interactive_ir import cli


@pytest.fixture
def fresh(monkeypatch):
    for key in (*cli.QUIET_ENV, "TQDM_DISABLE"):  # TQDM_DISABLE: set by app.main in an earlier test of the session
        monkeypatch.delenv(key, raising=False)
    for name in cli.THIRD_PARTIES:
        monkeypatch.setattr(logging.getLogger(name), "level", logging.NOTSET)
    return monkeypatch


def test_without_v_third_parties_say_warnings_only_and_show_no_bars(fresh):
    import os

    cli.quiet_third_parties(verbose=False)
    assert all(logging.getLogger(n).level == logging.WARNING for n in cli.THIRD_PARTIES)
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1" and os.environ["TRANSFORMERS_VERBOSITY"] == "error"
    assert "TQDM_DISABLE" not in os.environ  # the commands' own bars (index builds) stay


def test_with_v_they_speak(fresh):
    import os

    cli.quiet_third_parties(verbose=True)
    assert logging.getLogger("sentence_transformers").level == logging.NOTSET
    assert "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ


def test_an_operators_own_setting_wins(fresh):
    import os

    fresh.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "0")
    cli.quiet_third_parties(verbose=False)
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "0"
