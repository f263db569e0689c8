"""Run bundles: one self-describing folder per run (`eval --bundle DIR`, `study export --bundle DIR`) that others can
re-score without models or images (as MERLIN releases its run logs).

    DIR/bundle.json            format, kind (eval | study), when, the package versions, the run's configuration,
                               and per run (protocol or condition): its folder, index size, round budget, page size
    DIR/<run>/records.jsonl    one search per line: `target`, `ranks` (the target's rank in the index at each round),
                               `shown_ranks`, `turns[]` (round, kind, query, question, `shown` ids, `rank`), the
                               dialogue, `found_round`, `stop`: eval's own per-target records, unchanged
    DIR/<run>/ranks.json       query id -> ranks by round (what `metrics RANKS.json` reads)
    DIR/<run>/metrics.json     the metrics as the run computed them (re-scoring should give the same)

`python -m interactive_ir metrics DIR` re-scores every run of a bundle from its records (`rescore`). A study bundle
adds the event log (`events.jsonl`, `participants.json`, `meta.json`) that `study report --db DIR` analyses.
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

from interactive_ir.errors import BadInputError

FORMAT = "interactive_ir run bundle 1"
_PACKAGES = ("numpy", "faiss-cpu", "torch", "transformers", "open_clip_torch", "gradio", "statsmodels")


def versions() -> dict[str, str]:
    """Python's, this package's and the main libraries' versions (read from the installed metadata; nothing imported)."""
    from interactive_ir import __version__

    out = {"python": platform.python_version(), "interactive_ir": __version__}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in str(name)) or "run"


def write_bundle(out: str | Path, kind: str, config: Mapping, runs: Mapping[str, Mapping]) -> Path:
    """Write a bundle: `runs` = name -> {records, n_images, rounds, k, ks, metrics (optional), relevant (optional)}."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    listed = {}
    for name, run in runs.items():
        folder = out / safe_name(name)
        folder.mkdir(exist_ok=True)
        records = [r for r in run["records"] if isinstance(r, Mapping) and "target" in r]
        with open(folder / "records.jsonl", "w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
        ranks = {str(r.get("qid", r["target"])): list(r["ranks"]) for r in records if r.get("ranks")}
        (folder / "ranks.json").write_text(json.dumps(ranks, indent=1), encoding="utf-8")
        if run.get("metrics") is not None:
            (folder / "metrics.json").write_text(json.dumps(run["metrics"], indent=1, default=str), encoding="utf-8")
        listed[name] = {"folder": folder.name, "n_records": len(records), "n_images": int(run["n_images"]),
                        "rounds": run.get("rounds"), "k": run.get("k"), "ks": list(run.get("ks") or (1, 5, 10)),
                        "relevant": dict(run.get("relevant") or {})}
    meta = {"format": FORMAT, "kind": kind, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "versions": versions(), "config": dict(config), "runs": listed,
            "note": "no images: ids only; re-score with `python -m interactive_ir metrics DIR`"}
    (out / "bundle.json").write_text(json.dumps(meta, indent=1, default=str), encoding="utf-8")
    return out


def is_bundle(path: str | Path) -> bool:
    return (Path(path) / "bundle.json").is_file()


def read_bundle(path: str | Path) -> dict:
    """bundle.json, checked; a clear error for a folder that is not a bundle or one of a newer format."""
    path = Path(path)
    try:
        meta = json.loads((path / "bundle.json").read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise BadInputError(f"{path}: not a run bundle (no bundle.json); write one with `eval --bundle DIR` or "
                            "`study export --bundle DIR`") from e
    except (OSError, ValueError) as e:
        raise BadInputError(f"{path}/bundle.json cannot be read: {e}") from e
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or not isinstance(meta.get("runs"), dict):
        raise BadInputError(f"{path}/bundle.json is not a bundle this version reads (format {meta.get('format')!r}"
                            f" if isinstance(meta, dict) else '?'; this version reads {FORMAT!r})")
    return meta


def read_records(path: str | Path, run: Mapping) -> list[dict]:
    f = Path(path) / run["folder"] / "records.jsonl"
    out = []
    for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError as e:
                raise BadInputError(f"{f}: line {n} is not JSON: {e}") from e
    return out


def rescore(path: str | Path, ks: Sequence[int] | None = None) -> dict[str, dict]:
    """Every run's metrics, computed again from its records alone (no model, no index, no image)."""
    from interactive_ir.evaluation.report import summarise

    meta = read_bundle(path)
    out = {}
    for name, run in meta["runs"].items():
        records = read_records(path, run)
        _ranks, metrics = summarise(records, int(run["n_images"]), tuple(ks or run.get("ks") or (1, 5, 10)),
                                    run.get("relevant") or None, rounds=run.get("rounds"), page=run.get("k"))
        out[name] = metrics
    return out


def eval_bundle(eval_out: str | Path, bundle: str | Path, results: Mapping[str, Mapping], ks: Sequence[int],
                relevant: Mapping[str, Sequence[str]] | None = None) -> Path:
    """The bundle of an `eval --out` folder: each protocol's checkpoint records and metrics (`results`: name ->
    the metrics `eval` computed), the checkpoint headers as the configuration; `relevant`: query id -> its
    ground-truth images besides the target (several-ground-truth benchmarks)."""
    eval_out = Path(eval_out)
    runs, headers = {}, {}
    for name, metrics in results.items():
        f = eval_out / name.replace(":", "-") / "checkpoint.jsonl"
        if not f.is_file():
            continue
        records, header = _checkpoint(f)
        if isinstance(header.get("index"), dict) and header["index"].get("path"):  # the folder's name, not this disk's
            header["index"] = {**header["index"], "path": Path(str(header["index"]["path"])).name}
        headers[name] = {**header, "settings": metrics.get("settings"), "simulated_user": metrics.get("simulated_user"),
                         "preset": metrics.get("preset")}
        runs[name] = {"records": records, "n_images": (header.get("index") or {}).get("images") or
                      metrics.get("n_images") or 0, "rounds": header.get("rounds"), "k": header.get("k"),
                      "ks": list(ks), "metrics": metrics,
                      "relevant": {q: list(v) for q, v in (relevant or {}).items() if v}}
    if not runs:
        raise BadInputError(f"{eval_out}: no protocol's checkpoint.jsonl to bundle")
    return write_bundle(bundle, "eval", {"protocols": headers}, runs)


def _checkpoint(f: Path) -> tuple[list[dict], dict]:
    """(the latest record of each query, the header) of a checkpoint file; lines cut off mid-write are skipped."""
    header, by_qid = {}, {}
    for line in f.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and "header" in rec:
            header = rec["header"]
        elif isinstance(rec, dict) and "target" in rec:
            by_qid[str(rec.get("qid", rec["target"]))] = rec
    return list(by_qid.values()), header
