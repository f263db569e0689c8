"""Grounded questions: asked and answered without an LLM, from what the retrieval already computed.

- "choice": RCE (Algorithm 1, `rce.extract`) clusters the retrieval candidates S_R; the question
  "Which is closest to your image?" offers each cluster's representative (its image and a short caption)
  and "none of these".
- "yesno": "Is there a dog in the image?" on the content word of the candidates' captions that best
  splits them (`questioner.split_words`); "yes" stands for the candidates whose caption has the word.

A click is the answer. Each option stands for a set of candidates (`Option.members`): the chosen option's
members pull the query row, the other options' members push it (Rocchio on the search rows, `retrieval.query_updates.reshape`);
"none of these" has no members, so it pushes away from every shown cluster. The dialogue records the
click as text (`answer_text`), so a later LLM turn reads it too. Everything here is pure: ids, captions
and vectors in, typed questions and rows out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from interactive_ir.modes.conversation.plugir.questioner import has_word, question_about, split_words
from interactive_ir.types import NONE_OF_THESE, Option, Question

CHOICE_TEXT = "Which is closest to your image?"
LABEL_CHARS = 60  # longest option label (a representative's caption is cut at a word boundary)
STYLES = ("choice", "yesno", "alternate")


def short_label(caption: str, fallback: str, limit: int = LABEL_CHARS) -> str:
    """The caption as one short line (cut at a word boundary), else `fallback` (e.g. the image's file name)."""
    text = " ".join((caption or "").split()).rstrip(" .")
    if not text:
        return fallback.rsplit("/", 1)[-1]
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return (cut[: cut.rfind(" ")] if " " in cut else cut).rstrip(" ,;") + "\u2026"


def choice_question(ids: Sequence[str], labels: Sequence[int], representatives: Sequence[int],
                    captions: Sequence[str], round: int = -1) -> Question:
    """"Which is closest to your image?": one option per cluster, in the rank order of its representative
    (`representatives` are positions in `ids`, `captions` their captions), then "none of these"."""
    options = []
    for pos, cap in zip(representatives, captions):
        members = tuple(i for i, lab in zip(ids, labels) if lab == labels[pos])
        options.append(Option(short_label(cap, ids[pos]), ids[pos], members))
    options.append(Option(NONE_OF_THESE))
    return Question(CHOICE_TEXT, "choice", tuple(options), round)


def yesno_question(ids: Sequence[str], captions: Sequence[str], known: str = "", asked: Sequence[str] = (),
                   round: int = -1) -> Question | None:
    """A yes/no question on the word that best splits the candidates' captions, not about anything the
    description or dialogue (`known`) says, nor asked before; None when no word splits them."""
    asked_texts = set(asked)
    for word in split_words(captions, known, asked):
        text = question_about(word)
        if text in asked_texts:
            continue
        yes = tuple(i for i, c in zip(ids, captions) if c and has_word(c, word))
        no = tuple(i for i, c in zip(ids, captions) if c and not has_word(c, word))
        if yes and no:
            return Question(text, "yesno", (Option("yes", "", yes), Option("no", "", no)), round)
    return None


def answer_text(question: Question, option: Option) -> str:
    """The click as the dialogue records it: "closest to: a dog on the grass", "none of these", "yes", "no"."""
    if question.kind == "choice" and option.label != NONE_OF_THESE:
        return f"closest to: {option.label}"
    return option.label


def search_rows(retriever, rows: Sequence[int], tau: float | None = None) -> np.ndarray:
    """The candidates' rows in the space of a text query row: [(1 - tau) image | tau caption] on an index
    with captions (the weights of `Retriever.text_query_row`), the image (or caption) vectors otherwise."""
    index = retriever.index
    img = np.asarray(index.vectors(list(rows), "image"), np.float32)
    if index.caption_only or not index.has_captions:
        return img
    t = retriever.default_tau if tau is None else float(tau)
    cap = np.asarray(index.vectors(list(rows), "caption"), np.float32)
    return np.concatenate([(1.0 - t) * img, t * cap], axis=1)


def style_for(style: str, n_grounded_asked: int) -> str:
    """"choice" or "yesno" for the next grounded question ("alternate": choice first, then in turn)."""
    if style == "alternate":
        return "choice" if n_grounded_asked % 2 == 0 else "yesno"
    return style
