#!/usr/bin/env bash
# The honest offline benchmark (issue 14, item 7): every strategy that runs without an LLM, on Flickr8k dev,
# with the model-free simulated user.
#
# 1. Hold captions out of ../shared/data/flickr8k/captions.jsonl (all 7,000 images; SPLIT=dev for the 1,000 of
#    dev, where 85% of targets are in the top 10 from the description alone, leaving little to interact on):
#    per image one caption for the index, one as the simulated user's first description, three as what the
#    user knows.
# 2. Index the images by their index caption with text:all-MiniLM-L6-v2 (offline, no vision weights).
# 3. Model-free pass (LIMIT targets): no interaction, random irrelevant questions (a known-bad), the evaluation's
#    attribute questioner, the engine's grounded questioner (issue 13), feedback (expand, rocchio) with the
#    ground-truth relevance actor, composed search, mixed (grounded answers, feedback, relative captions), and
#    the oracle (a held-out caption volunteered each round: an upper reference).
# 4. Feedback with the opt-in caption-overlap actor (expand needs relevant marks; with ground truth only, a
#    single target gives none until it is shown, and then the search stops).
# 5. LLM pass (LLM_LIMIT targets, only when LLM_LIMIT > 0): zs with the offline SmolLM2 as the engine's
#    questioner (one sampled question per turn), beside none and grounded, on the first LLM_LIMIT targets the
#    description alone leaves outside the top 10 (from the model-free pass's `none` ranks), answered by the
#    same model-free user (slow: about 80 s per target on 2 busy cores).
# 6. Tables with 95% bootstrap intervals and paired differences against no interaction and zs.
#
# The simulated user judges "alike" with the index's own MiniLM (USER_SIM=index): it shares the retriever's
# notion of similarity, which flatters every strategy equally; USER_SIM=words uses no model at all.
# Every eval step resumes: run again after an interruption, or with a larger LIMIT to extend.
# Usage: bench/run_flickr_benchmark.sh                 (defaults below; override any by env var)
#        SPLIT=dev LIMIT=1000 LLM_LIMIT=20 WORK=runs/flickr_dev bench/run_flickr_benchmark.sh   (bench/README.md)
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${DATA:-../shared/data/flickr8k}      # folder with images/ and captions.jsonl
WORK=${WORK:-runs/flickr8k_bench}          # everything this script writes (gitignored)
SPLIT=${SPLIT:-}                            # "" = every image (7,000); dev = the 1,000 dev images
LIMIT=${LIMIT:-500}                        # targets of the model-free pass (a seeded random sample)
LLM=${LLM:-transformers:smollm2}           # the engine's LLM of the LLM pass
LLM_LIMIT=${LLM_LIMIT:-0}                  # targets of the LLM pass (0: skip it)
ROUNDS=${ROUNDS:-5}
SEED=${SEED:-0}
THREADS=${THREADS:-1}                      # torch threads (1 is fastest on a busy 2-core machine)
EMBEDDER=${EMBEDDER:-text:all-MiniLM-L6-v2}
USER_SIM=${USER_SIM:-index}                # the simulated user's similarity: index (MiniLM), words, or a spec
PROTOCOLS=${PROTOCOLS:-none,random-questions,attribute,grounded,feedback:expand,rocchio,composed:compose,mixed,oracle}
PY=${PYTHON:-python}

mkdir -p "$WORK/images"

echo "== 1. queries (caption hold-out)"
$PY -m interactive_ir queries --captions "$DATA/captions.jsonl" ${SPLIT:+--split "$SPLIT"} --seed "$SEED" \
    --out-captions "$WORK/index_captions.jsonl" --out-queries "$WORK/queries.jsonl"

echo "== 2. index of the images (symlinks, so the index holds only them)"
$PY - "$DATA/images" "$WORK" <<'EOF'
import json, os, sys
from pathlib import Path
src, work = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
for line in open(work / "index_captions.jsonl"):
    image = json.loads(line)["image"]
    link = work / "images" / image
    if not link.exists():
        os.symlink(src / image, link)
EOF
if [ ! -f "$WORK/index/manifest.json" ]; then
    $PY -m interactive_ir index --images "$WORK/images" --captions "$WORK/index_captions.jsonl" \
        --out "$WORK/index" --embedder "$EMBEDDER"
fi

run_eval() {  # OUT LIMIT PROTOCOLS [extra args]
    local out=$1 limit=$2 protocols=$3
    shift 3
    $PY -m interactive_ir eval --index "$WORK/index" --queries "$WORK/queries.jsonl" --protocol "$protocols" \
        --rounds "$ROUNDS" --limit "$limit" --seed "$SEED" --torch-threads "$THREADS" \
        --user-similarity "$USER_SIM" --out "$WORK/$out" "$@"
}

echo "== 3. model-free pass: $PROTOCOLS, $LIMIT targets, $ROUNDS rounds -> $WORK/modelfree"
run_eval modelfree "$LIMIT" "$PROTOCOLS"

echo "== 4. feedback with the opt-in caption-overlap relevance actor -> $WORK/overlap"
run_eval overlap "$LIMIT" "feedback:expand,rocchio" --relevance-overlap 0.5

if [ "$LLM_LIMIT" -gt 0 ]; then
    echo "== 5. LLM pass: zs with $LLM beside none and grounded, $LLM_LIMIT hard targets -> $WORK/llm_hard"
    $PY - "$WORK" <<'EOF'
import json, sys
from pathlib import Path
work = Path(sys.argv[1])
ranks = json.loads((work / "modelfree" / "none" / "ranks.json").read_text())
with open(work / "queries_hard.jsonl", "w") as out:
    for line in open(work / "queries.jsonl"):
        q = json.loads(line)
        if q["id"] in ranks and ranks[q["id"]][0] > 10:
            out.write(line)
EOF
    IIR_PLUGIR_N_QUESTIONS=1 $PY -m interactive_ir eval --index "$WORK/index" --queries "$WORK/queries_hard.jsonl" \
        --protocol zs,none,grounded --rounds "$ROUNDS" --limit "$LLM_LIMIT" --seed "$SEED" --torch-threads "$THREADS" \
        --user-similarity "$USER_SIM" --llm "$LLM" --out "$WORK/llm_hard"
fi

echo "== 6. tables"
$PY -m interactive_ir.evaluation.tables "$WORK" $([ "$LLM_LIMIT" -gt 0 ] && echo llm_hard) modelfree overlap \
    --rounds "$ROUNDS"
