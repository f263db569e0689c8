"""The study report as one HTML page (mixed-model tables, descriptive tables, plots, attention checks,
design warnings) and the data dictionary of every exported column."""

from __future__ import annotations

import csv
import html
from collections.abc import Sequence
from pathlib import Path

from interactive_ir.study.analysis.export import COLUMNS as EVENT_COLUMNS
from interactive_ir.study.analysis.tables import TASK_METRICS
from interactive_ir.study.instruments import SCORES

EVENT_DOC = {
    "id": "event number (increasing in the order events were written)",
    "study_id": "the study file's study_id",
    "participant": "participant id (generated; not the recruitment id, which is in the enrol payload)",
    "participant_number": "enrolment number 0, 1, ... (the Latin-square row)",
    "task": "1-based position of the task in the participant's plan (the practice task is 1 when there is one)",
    "target": "the target image id",
    "condition": "the condition's name",
    "round": "search round (0 = the first description)",
    "type": "event type (enrol, consent, task_start, description, results, question_shown, found, timeout, "
            "questionnaire, ...)",
    "payload": "JSON: the event's details (results: shown ids, scores, target_rank, timings; questionnaire: "
               "form, answers, scores, attention)",
    "client_ts": "the browser's clock (unix seconds) when the participant acted; empty when not sent",
    "server_ts": "the server's clock (unix seconds) when the event was written",
    "server_time": "server_ts as ISO 8601 UTC",
    "page_round": "the round as the page showed it, \"Round 1\" first (round + 1; empty with no round)",
}
PAYLOAD_DOC = {  # event type -> the keys of its payload
    "enrol": "number (enrolment number), recruitment {platform, id, params: the URL parameters}",
    "resume": "number",
    "consent": "agreed (true/false)",
    "task_start": "task_index, total, rounds, practice, time_limit_s, started_at, show_target, prompt, modes, label, "
                  "k, session_id",
    "description / answer / skip / search / feedback / reference / relative_caption":
        "what the participant gave: text, question, relevant and irrelevant ids, reference",
    "results": "kind, method, query, shown (ids), scores, target_rank (collection rank), target_position (on the "
               "page), timings, model_latencies, llm_calls, why, error, n_images, elapsed_s",
    "question_shown": "question, fallback (true: a candidate-built fallback question), model_latencies, timings",
    "click": "image_id, action (mark_relevant, mark_irrelevant, unmark, reference, unreference), is_target",
    "wrong_pick": "image_id",
    "found": "image_id, found_round, position, rounds_used, time_s, wrong_picks, practice",
    "give_up / budget_exhausted / timeout": "rounds_used, time_s, wrong_picks, practice",
    "questionnaire": "form, answers {item id: answer}, scores {score: value}, attention {item id: passed}, ended",
    "screened_out": "items (the answers that screened the participant out)",
    "error": "action, message (and what the participant gave)",
    "refused": "action, message, and what was sent (each text cut to 500 characters): an action the condition does "
               "not offer (e.g. a mark through the API in a text-only condition), refused; nothing else changed",
    "study_end": "tasks",
}
SESSION_DOC = {
    "participant": "participant id", "task": "position in the participant's plan", "task_index":
    "the task's index in the study file (-1: practice)", "target": "target image id", "condition": "condition name",
    "budget": "round budget", "ended": "found, give_up, budget_exhausted, timeout or empty (not ended)",
    "found_round": "round in which the target was picked", "time_s": "seconds from the task start to its end",
    "rounds_used": "search rounds after the first description", "bri": "per-task BRI (empty: not analysed)",
    "ranks": "JSON list: the target's collection rank after each round", "practice": "true for the practice task",
}
QUESTIONNAIRE_DOC = {
    "participant": "participant id", "form": "task (after each task), condition (after each condition's block) "
    "or end (end of the study)", "task": "position of the task the form followed", "condition":
    "condition of that task", "attention_failed": "attention-check items answered wrongly (;-separated)",
}


def data_dictionary(study: dict | None) -> list[tuple[str, str, str]]:
    """(file, column, meaning) for every column the export and the report write."""
    rows = [("events.csv|jsonl|parquet", c, EVENT_DOC.get(c, "")) for c in EVENT_COLUMNS]
    rows += [("events.csv|jsonl|parquet", f"payload of {t}", d) for t, d in PAYLOAD_DOC.items()]
    rows += [("sessions.csv", c, d) for c, d in SESSION_DOC.items()]
    items, scores = [], []
    for form in ("questions", "after_condition", "end_questions"):
        for q in (study or {}).get(form) or []:
            kind = q.get("type", "likert")
            scale = {"likert": f"1..{q.get('points', 5)} ({q.get('low_label')} .. {q.get('high_label')})",
                     "slider": f"{q.get('minimum')}..{q.get('maximum')} ({q.get('low_label')} .. "
                               f"{q.get('high_label')})",
                     "choice": "one of: " + ", ".join(q.get("options") or []),
                     "number": f"a number {q.get('minimum')}..{q.get('maximum')}", "text": "free text"}[kind]
            where = {"questions": "after each task", "after_condition": "after each condition",
                     "end_questions": "at the end"}[form]
            items.append(("questionnaires.csv", q.get("id", "?"), f"{q.get('text', '')} [{scale}; asked {where}]"
                          + (f"; attention check, expected {q['answer']!r}" if q.get("answer") is not None else "")))
            if q.get("instrument"):
                scores.extend(s for s in SCORES.get(q["instrument"], ()) if s not in scores)
    rows += [("questionnaires.csv", c, d) for c, d in QUESTIONNAIRE_DOC.items()] + items
    rows += [("questionnaires.csv", c, d) for c, d in scores]
    rows += [("analysis_tasks.csv", "participant", "participant id"),
             ("analysis_tasks.csv", "task", "the task's index in the study file (a random effect)"),
             ("analysis_tasks.csv", "condition", "condition name (the fixed effect)"),
             ("analysis_tasks.csv", "position", "the task's place in the participant's plan (the order effect)")]
    rows += [("analysis_tasks.csv", c, d) for c, d in TASK_METRICS.items()]
    rows += [("analysis_tasks.csv", "rating_<question>", "the task's answer to a Likert question")]
    rows += [("analysis_conditions.csv", "position", "the condition block's place in the participant's plan")]
    rows += [("analysis_conditions.csv", c, d) for c, d in scores]
    return rows


def write_dictionary(rows: Sequence[tuple[str, str, str]], path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["file", "column", "meaning"])
        w.writerows(rows)


def _f(x, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _p(x) -> str:
    return "–" if x is None else ("&lt; 0.001" if x < 0.001 else f"{x:.3f}")


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def model_html(m: dict) -> str:
    e = html.escape
    title = f"<h3>{e(m['metric'])}</h3>"
    if m["error"]:
        return f"{title}<p class='warn'>{e(m['error'])}</p>"
    means = _table(["condition", "n", "estimated mean", "95% CI"],
                   [[e(c), d["n"], _f(d["mean"]), f"[{_f(d['ci_low'])}, {_f(d['ci_high'])}]"]
                    for c, d in m["means"].items()])
    cons = _table(["contrast", "difference", "95% CI", "p", "p (Holm)", "d"],
                  [[f"{e(c['a'])} − {e(c['b'])}", _f(c["diff"]), f"[{_f(c['ci_low'])}, {_f(c['ci_high'])}]",
                    _p(c["p"]), _p(c["p_holm"]), _f(c["d"], 2)] for c in m["contrasts"]])
    o = m.get("order_slope")
    order = (f"<p>Order effect: {_f(o['estimate'])} per task (SE {_f(o['se'])}, p {_p(o['p'])}).</p>" if o else "")
    v = m["variances"]
    var = (f"<p class='small'>{m['n']} observations, {m['n_participants']} participants"
           + (f", {m['n_tasks']} tasks" if m.get("n_tasks") else "")
           + f"; variances: participant {_f(v.get('participant'))}, task {_f(v.get('task'))}, residual "
           f"{_f(v.get('residual'))}{'' if m['converged'] else '; the fit did not converge'}.</p>")
    return title + means + cons + order + var


STYLE = """<style>
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2rem auto; padding: 0 1rem; color: #111; }
table { border-collapse: collapse; margin: .5rem 0 1rem; } td, th { border: 1px solid #ccc; padding: .25rem .5rem; }
th { background: #f3f4f6; text-align: left; } .warn { color: #92400e; background: #fffbeb; padding: .3rem .5rem; }
.small { font-size: .85rem; color: #555; } img { max-width: 100%; }
</style>"""


def paradata_html(para: dict | None) -> str:
    """Time on the page: the flagged tasks and the analysis with or without them (both shown)."""
    if not para or not para.get("n_tasks_with_events"):
        return "<h2>Time on the page</h2><p class='small'>No focus or visibility events were logged.</p>"
    e, th = html.escape, para["thresholds"]
    rows = [[e(r["key"]), e(r["condition"]), r["defocus_count"], _f(r["time_away_s"]), r["idle_count"],
             _f(r["idle_s"]), _f(r["clock_offset_s"]), "yes" if r["flagged"] else ""]
            for r in para["tasks"] if r["defocus_count"] or r["idle_count"] or r["flagged"]]
    out = (f"<h2>Time on the page</h2><p>{len(para['flagged'])} task(s) flagged (over {th['max_away_s']} s away or "
           f"{th['max_defocus']} defocus events; 0 = off). The analysis above "
           + ("leaves them out." if para["excluded"] else "includes them (<code>--exclude-away</code> leaves them out).")
           + "</p>" + _table(["task", "condition", "defocus", "time away (s)", "idle periods", "idle (s)",
                              "clock offset (s)", "flagged"], rows))
    other = para.get("other_analysis") or {}
    if other and "error" not in other:
        out += (f"<p>With the flagged tasks {'in' if para['excluded'] else 'left out'}:</p>" + _table(
            ["condition", "tasks", "found rate", "BRI mean", "time per task (s)"],
            [[e(c), d["n_sessions"], _f(d["found_rate"]), _f(d["bri"]), _f(d["time_per_task_s"])]
             for c, d in other.items()]))
    return out


def write_html(rep: dict, path: Path, plots: Sequence[Path], dictionary: Sequence[tuple[str, str, str]]) -> None:
    e = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>Study report: {e(str(rep['study_id']))}"
             f"</title>{STYLE}</head><body>", f"<h1>Study report: {e(str(rep['study_id']))}</h1>",
             ("<p class='warn'><b>Dry run:</b> every participant here is simulated (<code>study simulate</code>). "
              "This checks the study's flow and analysis; the results compare nothing."
              + (f" Note: {e(rep['simulated']['note'])}." if (rep.get("simulated") or {}).get("note") else "")
              + "</p>" if rep.get("simulated") else ""),
             f"<p>{rep['n_participants']} participant(s) started tasks; {rep['n_sessions_ended']} task(s) analysed "
             f"of {rep['n_sessions_started']} started; left out: {rep['excluded']['practice']} practice, "
             f"{rep['excluded']['timeout']} timed out. Index of {rep['n_images']} images.</p>"]
    if rep["warnings"]:
        parts.append("<h2>Design warnings</h2><ul>" + "".join(f"<li class='warn'>{e(w)}</li>"
                                                             for w in rep["warnings"]) + "</ul>")
    att = rep["attention"]
    if att["n_checked"]:
        failed = att["failed"]
        parts.append(f"<h2>Attention checks</h2><p>{att['n_checked']} participant(s) checked, {len(failed)} failed"
                     + (": " + ", ".join(f"<b>{e(p)}</b> ({e(', '.join(items))})" for p, items in failed.items())
                        if failed else "") + ". Flagged participants are still in the analysis: decide before "
                     "looking at the results whether to exclude them.</p>")
    parts.append("<h2>Mixed-effects models</h2><p class='small'>Condition fixed; participant (and task, for "
                 "per-task metrics) random; estimated means with 95% Wald intervals; pairwise contrasts with "
                 "Holm-corrected p-values and d = difference / total SD; the order effect is the slope of the "
                 "task's position. Found is a linear probability model.</p>")
    parts += [model_html(m) for m in rep["analysis"].values()]
    if rep.get("end_scores"):
        parts.append("<h2>End-of-study scores</h2>" + _table(
            ["score", "n", "mean", "95% CI"], [[e(k), d["n"], _f(d["mean"]), f"[{_f(d['ci_low'])}, "
                                                f"{_f(d['ci_high'])}]"] for k, d in rep["end_scores"].items()]))
    parts.append("<h2>Descriptive retrieval results</h2>" + _table(
        ["condition", "tasks", "found rate", "BRI mean", "timed out"],
        [[e(c), d["n_sessions"], _f(d["found_rate"]), _f(d["bri"]["mean"]), d.get("timeout", 0)]
         for c, d in rep["conditions"].items()]))
    parts.append(paradata_html(rep.get("paradata")))
    if plots:
        parts.append("<h2>Plots</h2>" + "".join(f"<figure><img src='{e(p.name)}' alt='{e(p.stem)}'>"
                                                  f"<figcaption>{e(p.stem)}</figcaption></figure>" for p in plots))
    parts.append("<h2>Data dictionary</h2>" + _table(["file", "column", "meaning"],
                                                     [[e(a), f"<code>{e(b)}</code>", e(c)] for a, b, c in dictionary]))
    parts.append("</body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
