"""What a study's log becomes: `export` (the events as CSV or JSONL), `tables` (one row per task and per
participant x condition), `mixed` (their mixed models), `stats` (small statistics), `plots`, and
`report` with `report_html` (the report, its HTML and data dictionary)."""
