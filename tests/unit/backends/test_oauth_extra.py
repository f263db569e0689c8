"""A Space without Gradio's OAuth extra (issue 39): sign-in asked for says in one line what is missing and what to
do; on "auto" the page is served without sign-in, with a warning, rather than dying with a traceback."""

from __future__ import annotations

import importlib.util

import pytest

from interactive_ir.backends import visitor_llm
from interactive_ir.backends.visitor_llm import SignInConfig, SignInUnavailable, check_sign_in_possible

SPACE = {"OAUTH_CLIENT_ID": "abc", "SYSTEM": "spaces", "SPACE_ID": "me/app"}


@pytest.fixture
def no_authlib(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "authlib" else real(name, *a))


def test_sign_in_on_a_space_without_authlib_says_what_to_install(no_authlib):
    with pytest.raises(SignInUnavailable, match=r"authlib is not installed: pip install 'gradio\[oauth\]'"):
        check_sign_in_possible(SPACE)


def test_auto_on_a_space_without_the_extra_serves_without_sign_in(no_authlib, caplog):
    assert SignInConfig(sign_in="auto").enabled(SPACE) is False
    assert "gradio[oauth]" in caplog.text


def test_mocked_sign_in_off_a_space_needs_only_itsdangerous(no_authlib):
    assert visitor_llm.oauth_extra_missing({}) == []  # itsdangerous is a requirement: installed
    assert visitor_llm.oauth_extra_missing(SPACE) == ["authlib"]
    assert SignInConfig(sign_in="auto").enabled({}) is False  # no Space: off, as before
