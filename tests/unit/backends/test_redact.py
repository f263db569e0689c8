"""`backends.redact`: secrets out of every URL and header-like value (the owner's log), internal addresses out of
what visitors read, notes cut at a sentence or a word, never mid-word."""

from __future__ import annotations

import logging

import pytest

from interactive_ir.backends.redact import (
    RedactSecrets,
    hide_hosts,
    public_reason,
    public_spec,
    public_text,
    redact_text,
    redact_url,
    whole_sentences,
    with_public,
)
from interactive_ir.errors import BackendError

SECRETS = ("hunter2", "SEKRET", "tok3n", "s1gnature")


@pytest.mark.parametrize("url, kept", [
    ("https://bob:hunter2@llm.example.org:8443/v1", "https://***@llm.example.org:8443/v1"),
    ("http://bob@10.0.0.5:8000/v1", "http://***@10.0.0.5:8000/v1"),
    ("http://h:1/v1?api_key=SEKRET&model=x", "http://h:1/v1?api_key=***&model=x"),
    ("http://h/v1?token=tok3n&sig=s1gnature&X-Amz-Signature=SEKRET", "http://h/v1?token=***&sig=***&X-Amz-Signature=***"),
    ("http://h/v1?SEKRET", "http://h/v1?***"),
    ("http://h/v1#access_token=SEKRET", "http://h/v1#***"),
])
def test_redact_url_keeps_the_address_and_drops_the_credentials(url, kept):
    assert redact_url(url) == kept


@pytest.mark.parametrize("text", [
    "openai:m@https://bob:hunter2@10.0.0.5:8000/v1?api_key=SEKRET failed",
    "HTTPConnectionPool(host='10.0.0.5', port=8000): Max retries exceeded with url: /v1?key=SEKRET",
    "Error for url: http://alice:hunter2@llm.internal:9000/v1/chat?token=tok3n",
    "Authorization: Bearer SEKRETSEKRETSEKRET",
    "headers {'authorization': 'Basic aHVudGVyMg=='} api_key=SEKRET password: hunter2",
    "the key sk-SEKRETSEKRETSEKRET0123 and hf_SEKRETSEKRETSEKRET0123 were refused",
])
def test_redact_text_hides_every_secret_inside_messages(text):
    out = redact_text(text)
    assert not any(s in out for s in SECRETS) and "aHVudGVyMg" not in out and "sk-S" not in out, out


@pytest.mark.parametrize("text, host", [
    ("cannot reach http://10.0.0.5:8000/v1 (2 attempts)", "10.0.0.5"),
    ("HTTPConnectionPool(host='llm.internal', port=8000): Max retries exceeded", "llm.internal"),
    ("no reply from llm.corp.example:8000 in 3 s", "llm.corp.example"),
    ("connect to [fd00::5]:8000 failed", "fd00::5"),
    ("refused by 192.168.1.20", "192.168.1.20"),
])
def test_a_visitor_never_reads_an_internal_host_or_port(text, host):
    out = public_text(text)
    assert host not in out and ":8000" not in out and "the model's server" in out, out


def test_plain_sentences_pass_unchanged():
    for text in ("the language model did not answer: it timed out.", "Search for a red dog, round 2 of 3.",
                 "the token you gave was refused", "a basic search"):
        assert redact_text(text) == text and hide_hosts(text) == text


def test_a_spec_is_shown_to_visitors_without_its_address():
    assert public_spec("openai:gpt-4o@https://bob:hunter2@10.0.0.5:8000/v1") == "openai:gpt-4o"
    assert public_spec("openai-vision:qwen@llm.internal:8000") == "openai-vision:qwen"
    assert public_spec("transformers:smollm2") == "transformers:smollm2"


def test_notes_are_cut_at_a_sentence_or_a_word_never_mid_word():
    text = "The model failed. " + " ".join(f"word{i}" for i in range(200))
    out = whole_sentences(text, 120)
    assert len(out) <= 120 and out.endswith("…") and out.split()[-1].rstrip("…") in text.split()
    two = "First sentence is here. Second sentence is a little longer than the first one was."
    assert whole_sentences(two, 60) == "First sentence is here."
    assert whole_sentences("short", 60) == "short"


def test_a_backends_visitor_sentence_wins_over_its_message():
    e = with_public(BackendError("openai:m@http://bob:hunter2@10.0.0.5:8000/v1: no reply"), "it timed out.")
    assert public_reason(e) == "it timed out."
    plain = BackendError("cannot reach http://bob:hunter2@10.0.0.5:8000/v1 " + "x" * 400)
    out = public_reason(plain)
    assert "hunter2" not in out and "10.0.0.5" not in out and len(out) <= 300


def test_the_log_filter_redacts_formatted_records():
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "calling %s", ("http://bob:hunter2@h/v1?key=SEKRET",),
                               None)
    assert RedactSecrets().filter(record)
    assert "hunter2" not in record.getMessage() and "SEKRET" not in record.getMessage()


def test_a_public_services_link_stays_for_visitors_an_internal_one_goes():
    text = ("asked through https://router.huggingface.co/v1, index hf://user/iir-index, licence "
            "https://creativecommons.org/licenses/by/4.0/; served at http://llm.internal:8000/v1 and "
            "https://huggingface.co.evil.example/x and https://huggingface.co:8443/x")
    out = public_text(text)
    assert "https://router.huggingface.co/v1" in out and "hf://user/iir-index" in out
    assert "https://creativecommons.org/licenses/by/4.0/" in out
    assert "llm.internal" not in out and "evil.example" not in out and "8443" not in out
