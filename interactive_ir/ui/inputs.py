"""Gradio input components that refuse bad values in one short line (issue 40 item 7).

Gradio's own `Radio` and `Dropdown` refuse a value outside their choices with a message that echoes the whole
value (a megabyte sent comes back), and `Number(precision=0)` fails with a traceback on NaN, infinity, a string or
a list. These keep Gradio's behaviour for good values; a bad one is refused with at most `MAX_ECHO` characters of
it (the choices), or, for `Number`, handed on as it came so the handler refuses it in one line
(`handlers.option_index`).
"""

from __future__ import annotations

import types

import gradio as gr

MAX_ECHO = 40  # characters of a refused value shown back


def shown(value) -> str:
    """`value`'s repr, cut to `MAX_ECHO` characters."""
    text = repr(value)
    return text if len(text) <= MAX_ECHO else f"{text[:MAX_ECHO]}..."


def _refuse(component, payload) -> None:
    values = [v for _, v in component.choices]
    listed = ", ".join(shown(v) for v in values[:12]) + (", ..." if len(values) > 12 else "")
    label = getattr(component, "label", None)
    if not isinstance(label, str) or "__i18n__" in str(label):  # a translated label: its key is no name
        label = getattr(component, "elem_id", None) or "this setting"
    raise gr.Error(f"{shown(payload)} is not a choice of {label}: choose one of {listed}", print_exception=False)


def _in_choices(component, payload) -> bool:
    values = [v for _, v in component.choices]
    try:
        return payload in values
    except TypeError:  # an unhashable or odd value: compared one by one
        return any(payload == v for v in values)


def _guard(component, preprocess):
    """`component` with `preprocess` in place of its class's (an instance attribute: a subclass of a Gradio
    component would make Gradio write a .pyi stub beside this module at import)."""
    component.preprocess = types.MethodType(preprocess, component)
    return component


def _radio_preprocess(self, payload):
    if payload is not None and not _in_choices(self, payload):
        _refuse(self, payload)
    return type(self).preprocess(self, payload)


def _dropdown_preprocess(self, payload):
    if payload is not None and not self.allow_custom_value:
        for value in payload if isinstance(payload, list) else [payload]:
            if not _in_choices(self, value):
                _refuse(self, value)
    return type(self).preprocess(self, payload)


def _number_preprocess(self, payload):
    try:
        return type(self).preprocess(self, payload)
    except (TypeError, ValueError, OverflowError):
        return payload


def Radio(*args, **kwargs) -> gr.Radio:  # noqa: N802 (used as the component it builds)
    """`gr.Radio`, a value outside its choices refused in one short line."""
    return _guard(gr.Radio(*args, **kwargs), _radio_preprocess)


def Dropdown(*args, **kwargs) -> gr.Dropdown:  # noqa: N802
    """`gr.Dropdown`, a value outside its choices refused in one short line."""
    return _guard(gr.Dropdown(*args, **kwargs), _dropdown_preprocess)


def Number(*args, **kwargs) -> gr.Number:  # noqa: N802
    """`gr.Number`; a value Gradio cannot round (NaN, infinity, a string, a list) is passed on as it came, for the
    handler to refuse in one line."""
    return _guard(gr.Number(*args, **kwargs), _number_preprocess)
