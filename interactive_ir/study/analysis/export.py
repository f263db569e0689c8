"""Export the event log: one row per event, as CSV, JSON lines or Parquet.

Columns: id, study_id, participant, participant_number, task, target, condition, round, type, payload,
client_ts, server_ts, server_time (ISO 8601, UTC), page_round. `round` counts from 0 (the first description), as
every export before issue 39 did; `page_round` is the "Round N" the page showed (round + 1), added last so readers
of the older columns keep working. In CSV and Parquet `payload` is a JSON string; in
JSON lines it is an object.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone
from pathlib import Path

from interactive_ir.errors import BackendUnavailable, BadInputError
from interactive_ir.study.log import StudyLog

FORMATS = ("csv", "jsonl", "parquet")
COLUMNS = ("id", "study_id", "participant", "participant_number", "task", "target", "condition", "round", "type",
           "payload", "client_ts", "server_ts", "server_time", "page_round")


def event_rows(log: StudyLog, study_id: str | None = None) -> list[dict]:
    """Every event as a flat dict (payload still a dict), in id order."""
    numbers = {(p["study_id"], p["participant"]): p["number"] for p in log.participants()}
    rows = []
    for e in log.events(study_id):
        row = e.to_row()
        row["participant_number"] = numbers.get((e.study_id, e.participant))
        row["server_time"] = datetime.fromtimestamp(e.server_ts, timezone.utc).isoformat(timespec="milliseconds")
        row["page_round"] = None if row["round"] is None else int(row["round"]) + 1  # the page's "Round N"
        rows.append({c: row[c] for c in COLUMNS})
    return rows


def _flat(row: dict) -> dict:
    return {**row, "payload": json.dumps(row["payload"], ensure_ascii=False, sort_keys=True)}


def to_bytes(rows: list[dict], fmt: str) -> bytes:
    """The rows serialised in `fmt` (csv | jsonl | parquet)."""
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow(_flat(r))
        return buf.getvalue().encode("utf-8")
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    if fmt == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as e:
            raise BackendUnavailable("Parquet export needs pyarrow: pip install 'interactive_ir[eval]' "
                                     "(or use --format csv or jsonl)") from e
        flat = [_flat(r) for r in rows]
        schema = pa.schema([("id", pa.int64()), ("study_id", pa.string()), ("participant", pa.string()),
                            ("participant_number", pa.int64()), ("task", pa.int64()), ("target", pa.string()),
                            ("condition", pa.string()), ("round", pa.int64()), ("type", pa.string()),
                            ("payload", pa.string()), ("client_ts", pa.float64()), ("server_ts", pa.float64()),
                            ("server_time", pa.string()), ("page_round", pa.int64())])
        table = pa.Table.from_pylist(flat, schema=schema)
        buf = io.BytesIO()
        pq.write_table(table, buf)
        return buf.getvalue()
    raise BadInputError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")


def export_events(log: StudyLog, out: str | Path, fmt: str | None = None, study_id: str | None = None) -> int:
    """Write every event to `out` (format from `fmt` or the file's suffix); the number of rows."""
    out = Path(out)
    fmt = fmt or out.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise BadInputError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    rows = event_rows(log, study_id)
    data = to_bytes(rows, fmt)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    tmp.write_bytes(data)
    tmp.replace(out)
    return len(rows)
