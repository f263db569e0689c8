"""The photo demo's settings (`PhotoDemoConfig`, env `IIR_PHOTO_<FIELD>`) and when it is on (`decide`).

Where the Hub is reachable (a Space), the default gallery is a few thousand captioned photos from a dataset
that already exists on the Hub, indexed on the Space itself; the bundled clipart stays the offline gallery.
Every name is a setting, so a Space's owner can switch the mirror, its columns, the count or the credit
without touching the code.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from interactive_ir.config import apply_env, apply_overrides
from interactive_ir.index.credit import Credit

MODES = ("auto", "on", "off")


@dataclass(frozen=True)
class PhotoDemoConfig:
    """The photo gallery served where the Hub is reachable; env `IIR_PHOTO_<FIELD>`."""

    demo: str = "auto"  # "auto": on a Space (SPACE_ID set) with no IIR_INDEX, built when the Hub is reachable; "on": wherever no index is given; "off": the clipart gallery only
    dataset: str = "not-lain/docci"  # Hub dataset with Parquet files holding the image bytes (a mirror of google/docci, whose tar.gz the app cannot read)
    config: str = ""  # the dataset's config (subset); "" = any
    split: str = "train"  # the split whose Parquet files are read, in file order
    revision: str = ""  # a branch, tag or commit of the dataset; "" = main
    image_column: str = "image"  # column with the image ({bytes, path} struct or bytes)
    caption_column: str = "description"  # column with each photo's description (search uses it whole; cards show its first sentence)
    id_column: str = "example_id"  # column with a stable id per photo; left out (content hashes) when the dataset has none
    count: int = 2880  # photos indexed: the first N rows (2,880 = three ~500 MB shards of the DOCCI mirror, about 960 photos each)
    kind: str = "Photos"  # what the credit line calls them
    title: str = "DOCCI"  # the collection's name in the credit line and the progress note
    citation: str = "Onoe et al., 2024"  # who the credit line cites; "" = none
    license: str = "CC BY 4.0"  # the licence the credit line names (CC BY asks for the credit on the page)
    url: str = "https://google.github.io/docci/"  # the collection's page, linked from the credit line
    license_url: str = "https://creativecommons.org/licenses/by/4.0/"  # the licence's text, linked from the credit line
    nice: int = 10  # scheduling niceness of the background build (0-19): the page's searches go first

    def credit(self) -> Credit:
        """The credit recorded in the photo index when it is built (the page reads it back from there)."""
        return Credit(self.kind, self.title, self.license, self.citation, self.url, self.license_url)

    def source_key(self) -> str:
        """A short hash of what decides the photo index's content: another mirror, split, revision, column or
        count is another index (built anew), never a stale one."""
        what = {k: v for k, v in asdict(self).items()
                if k in ("dataset", "config", "split", "revision", "image_column", "caption_column", "id_column",
                         "count")}
        return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:10]

    def index_dir(self, indices: Path, embedder_spec: str) -> Path:
        """Where the photo index for this embedder lives under `indices` (IIR_INDICES_DIR)."""
        return Path(indices) / f"photos-{_slug(self.dataset)}-{self.source_key()}-{_slug(embedder_spec)}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:60]


def photo_demo_config(environ: Mapping[str, str] | None = None, **overrides) -> PhotoDemoConfig:
    """The defaults, then `IIR_PHOTO_*`, then non-None `overrides` (the app's --photo-demo flag). ValueError
    for a setting that cannot work, said in one line."""
    cfg = apply_overrides(apply_env(PhotoDemoConfig(), "IIR_PHOTO_", environ), **overrides)
    if cfg.demo.strip().lower() not in MODES:
        raise ValueError(f"IIR_PHOTO_DEMO={cfg.demo!r}: use auto, on or off")
    if cfg.count < 1:
        raise ValueError(f"IIR_PHOTO_COUNT must be at least 1, got {cfg.count}")
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", cfg.dataset):
        raise ValueError(f"IIR_PHOTO_DATASET={cfg.dataset!r} is not a Hub dataset id: write USER/NAME")
    if not 0 <= cfg.nice <= 19:
        raise ValueError(f"IIR_PHOTO_NICE must be between 0 and 19, got {cfg.nice}")
    return cfg


@dataclass(frozen=True)
class Decision:
    """Whether this start serves photos: `use` a photo index already built, `build` one when it is missing."""

    use: bool  # serve the photo index when it is on disk
    build: bool  # build it in the background when it is not
    why: str  # in a few words, for the log ("not on a Space", "the Hub cannot be reached" ...)


def decide(cfg: PhotoDemoConfig, *, index_given: bool, environ: Mapping[str, str], reachable) -> Decision:
    """Photos or the clipart for this start. `reachable()` says whether the Hub answers (asked only when it
    matters). A given index always wins; "auto" wants a Space; a photo index built on an earlier start is
    served even when the Hub is down now, but a new one is built only while it answers."""
    mode = cfg.demo.strip().lower()
    if mode == "off":
        return Decision(False, False, "the photo demo is off (IIR_PHOTO_DEMO=off)")
    if index_given:
        return Decision(False, False, "an index was given")
    if mode == "auto" and not environ.get("SPACE_ID"):
        return Decision(False, False, "not on a Hugging Face Space (IIR_PHOTO_DEMO=on turns it on here)")
    if not reachable():
        return Decision(True, False, "the Hub cannot be reached: photos are served only if built before")
    return Decision(True, True, "")
