#!/usr/bin/env bash
# Caption-space benchmark of every evaluation protocol on Flickr8k dev (issue 6).
#
# 1. Hold captions out of ../shared/data/flickr8k/captions.jsonl (split "dev", 1,000 images): per image one
#    caption for the index, one as the simulated user's first description, three as what the user knows.
# 2. Index the 1,000 dev images by their index caption with text:all-MiniLM-L6-v2 (offline, no vision weights).
# 3. Run every protocol for ROUNDS rounds with the fake LLM (the loop's own overhead) and with the offline
#    SmolLM2-135M-Instruct (transformers:smollm2) as both the engine's LLM and the simulated user.
# 4. Replay the PlugIR run's dialogues: fixed-dialogue:concat (ChatIR's zero-shot query on the same dialogues)
#    and fixed-dialogue:cr (PlugIR's context reformulation of them; equals the plugir ranks when generation is
#    deterministic, a check of the replay).
# 5. Print one Markdown table per LLM (BRI, Hits@10 by round, seconds per query).
#
# Every eval step resumes: run the script again after an interruption, or with a larger LIMIT to extend.
# Usage: bench/run_flickr_benchmark.sh             (defaults below; override any by env var)
#        LIMIT=100 FAKE_LIMIT=1000 bench/run_flickr_benchmark.sh
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${DATA:-../shared/data/flickr8k}      # folder with images/ and captions.jsonl
WORK=${WORK:-runs/flickr8k_bench}          # everything this script writes (gitignored)
LLM=${LLM:-transformers:smollm2}           # the real LLM run
LIMIT=${LIMIT:-4}                          # queries of the real-LLM run (a seeded random sample of the 1,000);
                                           # ~11 min per query for all protocols with SmolLM2 on 2 busy cores
FAKE_LIMIT=${FAKE_LIMIT:-1000}             # queries of the fake-LLM run
ROUNDS=${ROUNDS:-5}
SEED=${SEED:-0}
THREADS=${THREADS:-1}                      # torch threads (1 is fastest on a busy 2-core machine)
EMBEDDER=${EMBEDDER:-text:all-MiniLM-L6-v2}
PASSES=${PASSES:-"smollm2 fake"}           # which passes to run (two shells may run one each at once)
PY=${PYTHON:-python}

mkdir -p "$WORK/images"

echo "== 1. queries (caption hold-out)"
$PY -m interactive_ir queries --captions "$DATA/captions.jsonl" --split dev --seed "$SEED" \
    --out-captions "$WORK/index_captions.jsonl" --out-queries "$WORK/queries.jsonl"

echo "== 2. index of the dev images (symlinks, so the index holds only them)"
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

run_eval() {  # OUT LLM LIMIT PROTOCOLS [extra args]
    local out=$1 llm=$2 limit=$3 protocols=$4
    shift 4
    $PY -m interactive_ir eval --index "$WORK/index" --queries "$WORK/queries.jsonl" --protocol "$protocols" \
        --llm "$llm" --rounds "$ROUNDS" --limit "$limit" --seed "$SEED" --torch-threads "$THREADS" \
        --out "$WORK/$out" "$@"
}

for out in $PASSES; do
    case $out in
        smollm2) llm=$LLM limit=$LIMIT ;;
        fake) llm=fake limit=$FAKE_LIMIT ;;
        *) echo "unknown pass $out (smollm2 or fake)" >&2; exit 2 ;;
    esac
    echo "== 3. every protocol, $llm, $limit queries, $ROUNDS rounds -> $WORK/$out"
    run_eval "$out" "$llm" "$limit" all
    echo "== 4. replay the plugir dialogues ($out)"
    run_eval "$out" "$llm" "$limit" "fixed-dialogue:concat,fixed-dialogue:cr" --dialogues "$WORK/$out/plugir/dialogues.json"
done

echo "== 5. tables"
$PY - "$WORK" $PASSES <<'EOF'
import json, sys
from pathlib import Path
from interactive_ir.evaluation.report import markdown_table
work = Path(sys.argv[1])
for out in sys.argv[2:]:
    summary = json.loads((work / out / "summary.json").read_text())
    n = {m["n_queries"] for m in summary.values()}
    print(f"\n### {out}: {', '.join(map(str, sorted(n)))} queries, index of "
          f"{next(iter(summary.values()))['n_images']} images\n")
    print(markdown_table(summary))
EOF
