"""The page's text in other languages: one catalogue (English, German, Spanish, Chinese), served as `gr.I18n`.

The layout keeps its English text; `translate_page(demo)` swaps every label, placeholder, info line, button and
heading whose English is in `CATALOGUE` for a translation key, and `launch(i18n=catalogue())` lets the browser
show the text of its own language (`navigator.language`: de-DE shows German; a language not here, English).
Gradio translates static text only: what the server writes later (the status line, the results' cards, the
questions) stays English. A new English text on the page needs a row here to be translated (`untranslated`
lists those a built page has).
"""

from __future__ import annotations

import re

from interactive_ir.ui.layout import INTRO, TITLE

LOCALES = ("en", "de", "es", "zh")
PROPS = ("label", "info", "placeholder", "value")  # what Gradio's frontend translates (plus title, description)

# English text on the page -> (German, Spanish, Chinese)
CATALOGUE: dict[str, tuple[str, str, str]] = {
    f"# {TITLE}\n{INTRO}": (
        "# Interaktive Bildsuche\nBeschreiben Sie das gesuchte Bild und grenzen Sie es dann ein: beantworten Sie "
        "die Fragen, markieren Sie Ergebnisse oder sagen Sie, wie sich Ihres von einem unterscheidet. Drücken Sie "
        "**Gefunden** bei Ihrem Bild, um abzuschließen.",
        "# Búsqueda interactiva de imágenes\nDescribe la imagen que buscas y luego acota: responde a las preguntas, "
        "marca resultados o di en qué se diferencia la tuya de uno. Pulsa **Encontrada** en tu imagen para terminar.",
        "# 交互式图像检索\n描述您要找的图像，然后逐步缩小范围：回答问题、标记结果，或说明您的图像与某个结果有何不同。"
        "在您的图像上点击**找到了**即可结束。"),
    "Describe the image you are looking for": ("Beschreiben Sie das gesuchte Bild", "Describe la imagen que buscas",
                                               "描述您要找的图像"),
    "About this app": ("Über diese App", "Acerca de esta aplicación", "关于此应用"),
    "Folder": ("Ordner", "Carpeta", "文件夹"),
    "selected ids": ("ausgewählte IDs", "ids seleccionados", "已选 ID"),
    "Describe the image you are looking for, e.g. a cartoon cat on a red sofa": (
        "Beschreiben Sie das gesuchte Bild, z. B. eine Comic-Katze auf einem roten Sofa",
        "Describe la imagen que buscas, p. ej. un gato de dibujos animados en un sofá rojo",
        "描述您要找的图像，例如：红色沙发上的一只卡通猫"),
    "New search": ("Neue Suche", "Nueva búsqueda", "新搜索"),
    "More like my marks": ("Mehr wie meine Markierungen", "Más como mis marcas", "更多类似我标记的"),
    "Start by describing the image you are looking for.": (
        "Beschreiben Sie zuerst das gesuchte Bild.", "Empieza describiendo la imagen que buscas.",
        "请先描述您要找的图像。"),
    "Save search": ("Suche speichern", "Guardar búsqueda", "保存搜索"),
    "Open saved search": ("Gespeicherte Suche öffnen", "Abrir búsqueda guardada", "打开已保存的搜索"),
    "Earlier rounds": ("Frühere Runden", "Rondas anteriores", "之前的轮次"),
    "Your answer": ("Ihre Antwort", "Tu respuesta", "您的回答"),
    "Questions are off (no LLM)": ("Fragen sind aus (kein Sprachmodell)", "Preguntas desactivadas (sin LLM)",
                                   "提问已关闭（无语言模型）"),
    "Describe your image first": ("Beschreiben Sie zuerst Ihr Bild", "Describe primero tu imagen", "请先描述您的图像"),
    "Skip question": ("Frage überspringen", "Saltar pregunta", "跳过问题"),
    "Upload a reference image": ("Referenzbild hochladen", "Subir una imagen de referencia", "上传参考图像"),
    "How does your image differ from the reference?": (
        "Wie unterscheidet sich Ihr Bild von der Referenz?", "¿En qué se diferencia tu imagen de la referencia?",
        "您的图像与参考图像有何不同？"),
    "How does yours differ? e.g. the same, but at night": (
        "Was ist bei Ihrem anders? z. B. dasselbe, aber nachts", "¿En qué se diferencia la tuya? p. ej. igual, pero de noche",
        "您的有何不同？例如：一样，但在夜晚"),
    "Clear reference": ("Referenz entfernen", "Quitar referencia", "清除参考"),
    "Options": ("Optionen", "Opciones", "选项"),
    "Questions": ("Fragen", "Preguntas", "提问"),
    "Hide images already shown": ("Bereits gezeigte Bilder ausblenden", "Ocultar imágenes ya mostradas",
                                  "隐藏已显示的图像"),
    "Off: each round shows the best images, those seen before marked \"seen\". On: each round shows only new images.": (
        "Aus: jede Runde zeigt die besten Bilder, bereits gesehene als „gesehen“ markiert. An: jede Runde zeigt nur "
        "neue Bilder.",
        "Desactivado: cada ronda muestra las mejores imágenes, las ya vistas marcadas como «vista». Activado: cada "
        "ronda muestra solo imágenes nuevas.",
        "关：每轮显示最佳图像，之前见过的标为“已看”。开：每轮只显示新图像。"),
    "More like my marks: how": ("Mehr wie meine Markierungen: wie", "Más como mis marcas: cómo", "更多类似我标记的：方式"),
    "Reference + caption: how": ("Referenz + Beschreibung: wie", "Referencia + descripción: cómo", "参考 + 描述：方式"),
    "Export": ("Exportieren", "Exportar", "导出"),
    "Download results (CSV)": ("Ergebnisse herunterladen (CSV)", "Descargar resultados (CSV)", "下载结果（CSV）"),
    "Download results (JSON)": ("Ergebnisse herunterladen (JSON)", "Descargar resultados (JSON)", "下载结果（JSON）"),
    "Download images (zip)": ("Bilder herunterladen (zip)", "Descargar imágenes (zip)", "下载图像（zip）"),
}


def key_of(english: str) -> str:
    """The translation key of an English text: its words joined by `_` (no dots: the frontend reads a dot as
    a path), cut at 48 characters, with a number when two texts would share one."""
    return _KEYS[english]


def _make_keys() -> dict[str, str]:
    keys: dict[str, str] = {}
    for english in CATALOGUE:
        base = "iir_" + "_".join(re.findall(r"[a-z0-9]+", english.lower()))[:48]
        key, n = base, 2
        while key in keys.values():
            key, n = f"{base}_{n}", n + 1
        keys[english] = key
    return keys


_KEYS = _make_keys()
_ENGLISH = {key: english for english, key in _KEYS.items()}


def translations() -> dict[str, dict[str, str]]:
    """locale -> {key: text}, every locale complete."""
    out: dict[str, dict[str, str]] = {loc: {} for loc in LOCALES}
    for english, others in CATALOGUE.items():
        key = _KEYS[english]
        out["en"][key] = english
        for loc, text in zip(LOCALES[1:], others):
            out[loc][key] = text
    return out


def catalogue():
    """The catalogue as Gradio's `gr.I18n` (for `launch(i18n=...)`)."""
    import gradio as gr

    return gr.I18n(**translations())


def translate_page(demo) -> int:
    """Swap the catalogued English texts of a built page's components for translation keys; returns how many."""
    from gradio.i18n import I18nData

    n = 0
    for block in demo.blocks.values():
        for prop in PROPS:
            value = getattr(block, prop, None)
            if isinstance(value, str) and value in _KEYS:
                setattr(block, prop, str(I18nData(_KEYS[value])))
                n += 1
    plain_api_labels(demo)
    return n


def _english(text):
    """The English text of a translation key's marker (`__i18n__{"key": ...}`); other values as they are."""
    if isinstance(text, str) and text.startswith("__i18n__"):
        match = re.search(r'"key":\s*"([^"]+)"', text)
        return _ENGLISH.get(match.group(1), text) if match else text
    return text


def plain_api_labels(demo) -> None:
    """The HTTP API's description (`/gradio_api/info`, "Use via API") names each input and output by its English
    label, not by the page's translation marker."""
    original = demo.get_api_info

    def get_api_info(*args, **kwargs):
        info = original(*args, **kwargs)
        for kind in ("named_endpoints", "unnamed_endpoints"):
            for endpoint in (info or {}).get(kind, {}).values():
                for row in endpoint.get("parameters", []) + endpoint.get("returns", []):
                    row["label"] = _english(row.get("label"))
        return info

    demo.get_api_info = get_api_info


def untranslated(demo) -> list[str]:
    """The English texts of a built page's components that the catalogue lacks (hidden API inputs left out)."""
    out = []
    for block in demo.blocks.values():
        if getattr(block, "visible", True) is False or getattr(block, "elem_id", None) is None:
            continue
        for prop in ("label", "info", "placeholder"):
            value = getattr(block, prop, None)
            if isinstance(value, str) and value.strip() and "__i18n__" not in value:
                out.append(value)
    return out
