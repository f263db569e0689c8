"""Languages (issue 26, deliverable 9): the query-language check, the English-only note, the page's catalogue."""

from __future__ import annotations

import pytest
from iir_testutils import query_modes

from interactive_ir.backends.embedders import MULTILINGUAL_EMBEDDER, is_multilingual
from interactive_ir.engine import EngineConfig, build_engine
from interactive_ir.ui import handlers, i18n
from interactive_ir.ui.language import english_only_note, query_language
from interactive_ir.ui.state import UIState

ENGLISH = ["a dog on the beach", "A man in a red shirt", "die hard poster", "Le Mans race car", "two girls in the park",
           "a café in Paris", "Three boys do hear no evil , see no evil", "A black dog is running after a white dog .",
           "un", "dog", "", "   ", "12345", "Hund"]
OTHER = {"ein Hund am Strand": "de", "zwei Kinder spielen im Wasser": "de", "eine Frau mit rotem Regenschirm": "de",
         "ein Mädchen": "de", "un perro en la playa": "es", "dos niños jugando con una pelota": "es",
         "un chien sur la plage": "fr", "海滩上的一只狗": "zh", "一个穿红衣服的女孩": "zh", "ビーチの犬": "ja",
         "해변의 개": "ko", "собака на пляже": "cyrillic", "een hond op het strand": "nl"}


@pytest.mark.parametrize("text", ENGLISH)
def test_english_and_too_little_to_tell_are_not_flagged(text):
    assert query_language(text) is None


@pytest.mark.parametrize("text,lang", OTHER.items())
def test_other_languages_and_scripts_are_recognised(text, lang):
    assert query_language(text) == lang


def test_the_note_names_the_language_the_embedder_and_the_multilingual_preset():
    note = english_only_note("open_clip:ViT-B-32:laion2b_s34b_b79k", "ein Hund am Strand")
    assert "German" in note and "open_clip:ViT-B-32:laion2b_s34b_b79k" in note and MULTILINGUAL_EMBEDDER in note
    assert english_only_note("open_clip:ViT-B-32:laion2b_s34b_b79k", "a dog on the beach") == ""
    for multi in (MULTILINGUAL_EMBEDDER, "text:paraphrase-multilingual-MiniLM-L12-v2", "hf:google/siglip2-base-patch16-224"):
        assert is_multilingual(multi) and english_only_note(multi, "海滩上的一只狗") == ""
    for english_only in ("fake:32", "text:all-MiniLM-L6-v2", "hf:openai/clip-vit-base-patch32"):
        assert not is_multilingual(english_only)


def test_a_search_in_german_on_an_english_only_index_says_so_and_still_searches(tiny_index):
    engine = build_engine(tiny_index[0], llm=None, config=EngineConfig(k=4), belief=query_modes())
    st = handlers.start(engine, UIState(), "ein Hund am Strand")
    assert "look German" in st.notice and "fake:32" in st.notice and len(st.session.last.shown) == 4
    st = handlers.start(engine, UIState(), "a dog on the beach")
    assert st.notice == ""


def test_every_locale_has_every_text_and_keys_are_safe():
    t = i18n.translations()
    assert set(t) == {"en", "de", "es", "zh"}
    keys = set(t["en"])
    assert len(keys) == len(i18n.CATALOGUE) and all(set(t[loc]) == keys for loc in t)
    assert all("." not in k and k.startswith("iir_") for k in keys)  # a dot would be read as a path by the frontend
    for loc in ("de", "es", "zh"):
        assert all(t[loc][k] and t[loc][k] != t["en"][k] for k in keys), loc
    assert t["de"][i18n.key_of("New search")] == "Neue Suche"


def test_the_built_page_uses_the_catalogue_for_its_static_text(tiny_index):
    from interactive_ir.ui import build_demo, launch_options

    engine = build_engine(tiny_index[0], llm=None, config=EngineConfig(k=4), belief=query_modes())
    demo = build_demo(engine, ["notes"])
    assert i18n.untranslated(demo) == []  # every visible label, placeholder and info line has a translation
    texts = [getattr(b, p, None) for b in demo.blocks.values() for p in i18n.PROPS]
    keyed = {i18n.key_of(e) for e in i18n.CATALOGUE if any(isinstance(x, str) and i18n.key_of(e) in x for x in texts)}
    assert len(keyed) >= len(i18n.CATALOGUE) - 2  # the rest depend on the page's modes (no LLM here)
    assert launch_options(engine)["i18n"].translations_dict["de"][i18n.key_of("Options")] == "Optionen"


def test_the_http_apis_labels_are_plain_english(tiny_index):
    """The page's labels are translation markers for the browser; the HTTP API's description (/gradio_api/info,
    "Use via API") names inputs and outputs in plain words (issue 39)."""
    from interactive_ir.ui import build_demo

    engine = build_engine(tiny_index[0], llm=None, config=EngineConfig(k=4), belief=query_modes())
    demo = build_demo(engine, ["notes"])
    info = demo.get_api_info()
    labels = [row.get("label") for kind in ("named_endpoints", "unnamed_endpoints")
              for e in info[kind].values() for row in e["parameters"] + e["returns"]]
    assert labels and not [x for x in labels if isinstance(x, str) and "__i18n__" in x]
    assert set(labels) & set(i18n.CATALOGUE)  # the catalogue's English, where a marker was
