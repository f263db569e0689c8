"""Can the tests see a broken core? One-line mutations, each applied in a temporary copy of the project, each
run against the tests that should catch it; prints a table and exits non-zero when one survives (issue 31).

Each mutation names: the file, the exact text it replaces (which must occur exactly once: a mutation whose
text has gone stale is reported as such, not as caught), the replacement, and the test files (pytest
arguments) that must fail on it. The copy is made from `git ls-files`, so nothing of the working tree's
untracked files or caches leaks in; tests run with `-x -q -p no:cacheprovider` under a timeout.

Usage: python bench/mutations.py [--only NAME[,NAME...]] [--timeout 600] [--list]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutation:
    name: str  # short id
    area: str  # what part of the core it breaks
    path: str  # file, relative to the project root
    old: str  # the exact text replaced (must occur once)
    new: str  # its replacement
    tests: tuple[str, ...]  # pytest arguments that must fail


M = Mutation
MUTATIONS: tuple[Mutation, ...] = (
    # exact search and exclusion
    M("rank-ties", "exact search", "interactive_ir/retrieval/retriever.py",
      "return int(np.sum(scores[mask] > scores[row])) + 1", "return int(np.sum(scores[mask] >= scores[row])) + 1",
      ("tests/unit/modes/test_belief.py",)),
    M("search-no-exclusion", "exclusion", "interactive_ir/retrieval/retriever.py",
      "        ex = self.exclude_rows(exclude)\n", "        ex = np.zeros(0, dtype=np.int64)\n",
      ("tests/unit/retrieval/test_retriever.py", "tests/unit/test_engine_seen.py")),
    M("session-no-exclusion", "exclusion", "interactive_ir/core/text_search.py",
      "        if not (page or self.hides_seen(session)):", "        if True:",
      ("tests/unit/test_engine_seen.py",)),
    M("text-limit", "input checks", "interactive_ir/retrieval/retriever.py",
      "    if len(text) > limit:", "    if len(text) > limit + 10_000:",
      ("tests/unit/retrieval/test_text_cleaning.py", "tests/unit/test_config.py")),
    # metrics
    M("hits-strict", "metrics", "interactive_ir/evaluation/metrics.py",
      "return _by_round((_best(rank_matrix(ranks, n_images)) <= k).astype(np.float64))",
      "return _by_round((_best(rank_matrix(ranks, n_images)) < k).astype(np.float64))",
      ("tests/unit/evaluation/test_metrics.py",)),
    M("budget-off-by-one", "metrics", "interactive_ir/evaluation/headline.py",
      "            if len(seen) >= budget:", "            if len(seen) > budget:",
      ("tests/unit/evaluation/test_headline.py",)),
    M("belief-rank-ties", "metrics", "interactive_ir/retrieval/belief.py",
      "            return int(np.sum(logp > logp[pos])) + 1",
      "            return int(np.sum(logp >= logp[pos])) + 1",
      ("tests/unit/modes/test_belief.py",)),
    # the simulated user's knowledge
    M("index-caption-leak", "simulated user", "interactive_ir/evaluation/queries.py",
      "description=caps[1], captions=tuple(caps[2:])))", "description=caps[1], captions=tuple(caps[2:]) + (caps[0],)))",
      ("tests/unit/evaluation/test_eval_ranking.py", "-k", "never_sees")),
    M("recognise-nothing", "simulated user", "interactive_ir/evaluation/knowledge.py",
      "        return _h(self.salt, image_id) == self.target_hash\n", "        return False\n",
      ("tests/unit/evaluation/test_simulators.py", "tests/unit/evaluation/test_protocols.py")),
    M("whole-caption-answer", "simulated user", "interactive_ir/evaluation/answers.py",
      "    while words and norm(\" \".join(words)) in whole:", "    while False:",
      ("tests/unit/evaluation/test_simulators.py",)),
    M("no-stop-on-found", "evaluation", "interactive_ir/evaluation/runner.py",
      "        if res.found_round is not None and cfg.stop_on_found:  # found, in the last round too",
      "        if False:  # found, in the last round too",
      ("tests/unit/evaluation/test_protocols.py", "tests/unit/commands/test_eval_cmd.py")),
    M("reference-kept", "evaluation", "interactive_ir/evaluation/runner.py",
      "    return (query.reference,) if query.reference and not cfg.keep_reference else ()",
      "    return ()", ("tests/unit/evaluation/test_composed_benchmarks.py",)),
    # query updates: feedback and the questioner's pull
    M("rocchio-sign", "query updates", "interactive_ir/retrieval/query_updates.py",
      "        q = q + beta * np.asarray(relevant, np.float64).mean(axis=0)",
      "        q = q - beta * np.asarray(relevant, np.float64).mean(axis=0)",
      ("tests/unit/modes/test_feedback.py",)),
    M("pull-inverted", "questioner's pull", "interactive_ir/retrieval/query_updates.py",
      "            out += pull * length * u", "            out -= pull * length * u",
      ("tests/unit/modes/test_grounded.py",)),
    M("no-yesno", "questioner", "interactive_ir/modes/conversation/plugir/grounded.py",
      "def yesno_question(", "def _unused(", ("tests/unit/study/test_study_ui.py", "tests/unit/modes/test_grounded.py")),
    # the belief
    M("belief-no-normaliser", "belief update", "interactive_ir/retrieval/belief.py",
      "model = _lse(logits[:, cols], 1) - _lse(logits, 1)", "model = _lse(logits[:, cols], 1)",
      ("tests/unit/modes/test_belief.py", "tests/unit/modes/test_belief_evidence.py")),
    M("belief-click-sign", "belief update", "interactive_ir/retrieval/belief.py",
      "a = cos.astype(np.float64) / t", "a = -cos.astype(np.float64) / t",
      ("tests/unit/modes/test_belief.py", "tests/unit/modes/test_belief_evidence.py")),
    M("belief-click-temperature", "belief update", "interactive_ir/retrieval/belief.py",
      "a = cos.astype(np.float64) / t", "a = cos.astype(np.float64) * t",
      ("tests/unit/modes/test_belief.py", "tests/unit/modes/test_belief_evidence.py")),
    M("belief-none-option-dropped", "belief update", "interactive_ir/retrieval/belief.py",
      "self.config.none_similarity / t)], axis=-1)", "-1e9)], axis=-1)",
      ("tests/unit/modes/test_belief.py", "tests/unit/modes/test_belief_evidence.py")),
    M("belief-marks-sum-not-lse", "belief update", "interactive_ir/retrieval/belief.py",
      "model = _lse(logits[:, cols], 1) - _lse(logits, 1)", "model = logits[:, cols].sum(axis=1) - _lse(logits, 1)",
      ("tests/unit/modes/test_belief.py", "tests/unit/modes/test_belief_evidence.py")),
    M("belief-marks-first-only", "belief update", "interactive_ir/retrieval/belief.py",
      "model = _lse(logits[:, cols], 1) - _lse(logits, 1)", "model = logits[:, cols[0]] - _lse(logits, 1)",
      ("tests/unit/modes/test_belief.py", "tests/unit/modes/test_belief_evidence.py")),
    M("belief-say-sign", "belief update", "interactive_ir/retrieval/belief.py",
      "((positive, 1.0), (negative, -self.config.unsay_weight))",
      "((positive, -1.0), (negative, -self.config.unsay_weight))",
      ("tests/unit/modes/test_belief.py", "tests/unit/modes/test_belief_evidence.py")),
    M("belief-unsay-sign", "belief update", "interactive_ir/retrieval/belief.py",
      "((positive, 1.0), (negative, -self.config.unsay_weight))",
      "((positive, 1.0), (negative, self.config.unsay_weight))",
      ("tests/unit/modes/test_belief.py", "tests/unit/modes/test_belief_evidence.py")),
    M("belief-say-temperature", "belief update", "interactive_ir/retrieval/belief.py",
      "term += weight * (self.vectors @ q).astype(np.float64) / t", "term += weight * (self.vectors @ q).astype(np.float64) * t",
      ("tests/unit/modes/test_belief.py", "tests/unit/modes/test_belief_evidence.py")),
    M("belief-rule-out-finite", "belief update", "interactive_ir/retrieval/belief.py",
      "self.actions[pos[ok]] = -np.inf  # O(shown log N)", "self.actions[pos[ok]] = -30.0  # O(shown log N)",
      ("tests/unit/modes/test_belief.py", "tests/unit/modes/test_belief_evidence.py")),
    M("belief-rule-out-neighbour", "belief update", "interactive_ir/retrieval/belief.py",
      "self.actions[pos[ok]] = -np.inf  # O(shown log N)", "self.actions[pos] = -np.inf  # O(shown log N)",
      ("tests/unit/modes/test_belief.py", "tests/unit/modes/test_belief_evidence.py")),
    M("belief-keeps-shown", "belief update", "interactive_ir/modes/belief/mode.py",
      "        shown = Counter(i for t in session.turns for i in t.shown)\n"
      "        b.set_seen(self._rows(shown, strict=False), [shown[i] for i in shown if i in self.index.row_of])",
      "        pass", ("tests/unit/modes/test_belief.py",)),
    M("belief-page-shows-excluded", "belief update", "interactive_ir/retrieval/belief.py",
      "            logp[pos[ok]] = -np.inf  # rows outside a pool are not on it anyway",
      "            pass",
      ("tests/unit/modes/test_belief.py",)),
    # the image route and uploads
    M("route-any-token", "image route", "interactive_ir/ui/serving/files.py",
      "        if row is None:\n            raise NotServed(\"unknown token\")", "        if row is None:\n            row = 0",
      ("tests/unit/ui/test_media_route.py",)),
    M("mark-waits-behind-clicks", "queue groups", "interactive_ir/ui/listeners.py",
      '"mark": {"concurrency_id": "mark"', '"mark": {"concurrency_id": "ui"', ("tests/unit/ui/test_ui_queue_groups.py",)),
    M("upload-size", "uploads", "interactive_ir/ui/serving/uploads.py",
      "        if size > p.max_bytes:", "        if size > p.max_bytes * 100:",
      ("tests/unit/ui/test_uploads_policy.py",)),
    M("pixel-bomb", "image input", "interactive_ir/index/imageio.py",
      "                if w * h > limit:", "                if w * h > limit * 1000:",
      ("tests/unit/index/test_index_bad_files.py", "tests/unit/ui/test_uploads_policy.py", "tests/unit/modes/test_composed.py")),
    # study durability and records
    M("study-sync-normal", "study durability", "interactive_ir/study/log.py",
      "    synchronous: str = \"FULL\"  # FULL", "    synchronous: str = \"NORMAL\"  # FULL",
      ("tests/unit/study/test_study_ui.py", "tests/unit/study/test_study_log.py")),
    M("session-drops-turns", "records", "interactive_ir/core/session.py",
      "        data[\"turns\"] = [Turn.from_dict(t) for t in d.get(\"turns\", [])]", "        data[\"turns\"] = []",
      ("tests/unit/core/test_steps.py", "tests/unit/modes/test_belief.py", "tests/unit/commands/test_chat_cmd.py")),
    # Milvus export
    M("milvus-dim", "vector store", "interactive_ir/index/vector_store.py",
      "schema.add_field(\"vector\", DataType.FLOAT_VECTOR, dim=width)",
      "schema.add_field(\"vector\", DataType.FLOAT_VECTOR, dim=width + 1)", ("tests/unit/index/test_vector_store.py",)),
    # settings
    M("text-limit-env-ignored", "settings", "interactive_ir/config.py",
      "def text_limit(", "def _text_limit_unused(", ("tests/unit/test_config.py", "tests/unit/retrieval/test_text_cleaning.py")),
    # the page and the tests' own checks (issue 25 leftovers, issue 31 items 2 and 8)
    M("answer-raw-label", "page", "interactive_ir/ui/render.py",
      "    return t.user_text.replace(label, plain_caption(label, CARD_CHARS) or label)", "    return t.user_text",
      ("tests/unit/ui/test_ui_render.py",)),
    M("selection-unchecked", "page", "interactive_ir/ui/export.py",
      "ids[:MAX_SELECTED] if isinstance(i, str) and 0 < len(i) <= 1000", "ids if isinstance(i, (str, int))",
      ("tests/unit/ui/test_ui_export.py",)),
    M("skips-pass-ci", "CI", "tests/skip_policy.py",
      "    if bad and exitstatus == 0:", "    if False:", ("tests/test_skip_policy.py",)),
    M("browser-reads-unchecked", "CI", "tests/test_browser_waits.py",
      'COUNT_READ = re.compile(r"^\\s*assert\\b.*\\.count\\(\\)")', 'COUNT_READ = re.compile(r"^$^")',
      ("tests/test_browser_waits.py",)),
)


def copy_tree(dest: Path) -> None:
    """The tracked files of the project (what a clean clone holds) into `dest`."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split("\n")
    for f in filter(None, files):
        src = ROOT / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)


def run_one(m: Mutation, timeout: int) -> tuple[str, float]:
    """('caught' | 'SURVIVED' | 'stale' | 'timeout', seconds) for one mutation in a fresh copy."""
    with tempfile.TemporaryDirectory(prefix="iir_mut_") as tmp:
        root = Path(tmp) / "project"
        copy_tree(root)
        if (ROOT.parent / "shared").exists() and not (root.parent / "shared").exists():
            os.symlink(ROOT.parent / "shared", root.parent / "shared")  # tests read ../shared/data
        target = root / m.path
        text = target.read_text(encoding="utf-8")
        if text.count(m.old) != 1:
            return "stale", 0.0
        target.write_text(text.replace(m.old, m.new), encoding="utf-8")
        t0 = time.perf_counter()
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *m.tests]
        try:
            rc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            return "timeout", time.perf_counter() - t0
        return ("caught" if rc != 0 else "SURVIVED"), time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated mutation names")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per mutation's test run")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only.split(",")]
    if args.list:
        for m in chosen:
            print(f"{m.name:28} {m.area:18} {m.path}")
        return 0
    print(f"{len(chosen)} mutations; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| mutation | area | file | tests | result | s |\n|---|---|---|---|---|---|")
    bad = 0
    for m in chosen:
        result, secs = run_one(m, args.timeout)
        bad += result != "caught"
        print(f"| {m.name} | {m.area} | {m.path} | {' '.join(m.tests)} | {result} | {secs:.0f} |", flush=True)
    print(f"\n{len(chosen) - bad} of {len(chosen)} caught")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
