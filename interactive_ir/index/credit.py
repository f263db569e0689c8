"""Where an index's images come from and under which licence: its `credit`, a field of `manifest.json`.

Written when the index is built (`write_credit`) and read wherever the collection is shown (`credit_of`):
the page's credit line ("Photos: DOCCI (Onoe et al., 2024), CC BY 4.0") comes from the index it serves,
never from text in the page's code. An index without one (a user's own folder) shows no credit line.
The manifest's file checksums do not cover the manifest itself, so adding the field changes no check.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path

FIELD = "credit"  # the manifest's key


@dataclass(frozen=True)
class Credit:
    """What the images are, whose they are and their licence, as the page credits them."""

    kind: str  # what the images are, as the credit line starts: "Photos", "Drawings"
    title: str  # the collection's name: "DOCCI"
    license: str  # its licence in words: "CC BY 4.0", "public domain"
    citation: str = ""  # who to cite, in brackets after the title: "Onoe et al., 2024"
    url: str = ""  # the collection's page (the title links to it); "" = no link
    license_url: str = ""  # the licence's text (the licence links to it); "" = no link

    def line(self) -> str:
        """The credit in one line of plain text: "Photos: DOCCI (Onoe et al., 2024), CC BY 4.0"."""
        cite = f" ({self.citation})" if self.citation else ""
        return f"{self.kind}: {self.title}{cite}, {self.license}"

    def markdown(self) -> str:
        """The same line with its links, in Markdown (the page's "About this app")."""
        title = f"[{self.title}]({self.url})" if self.url else self.title
        lic = f"[{self.license}]({self.license_url})" if self.license_url else self.license
        cite = f" ({self.citation})" if self.citation else ""
        return f"{self.kind}: {title}{cite}, {lic}"


def credit_of(manifest: dict | None) -> Credit | None:
    """The credit an index's manifest records, or None (none recorded, or not a readable one)."""
    raw = (manifest or {}).get(FIELD)
    if not isinstance(raw, dict):
        return None
    names = {f.name for f in fields(Credit)}
    values = {k: v for k, v in raw.items() if k in names and isinstance(v, str)}
    if not all(values.get(k, "").strip() for k in ("kind", "title", "license")):
        return None
    return Credit(**values)


def write_credit(folder: Path, credit: Credit) -> None:
    """Record `credit` in the index `folder`'s manifest (written beside it, then renamed over it: a reader
    never sees half a manifest)."""
    from interactive_ir.index.store import write_manifest_field

    write_manifest_field(Path(folder), FIELD, asdict(credit))
