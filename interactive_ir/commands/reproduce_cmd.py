"""`python -m interactive_ir reproduce NAME --data DIR [--llm ...] [--vlm ...] [--embedder ...] [--keep-reference]`

Runs a paper's evaluation preset on the paper's data and prints the paper's figures beside the run's,
with the difference. The data are downloaded by the user. What DIR must hold for each NAME (which files,
which fields are read, where to get them, the exact commands) is the table `LAYOUTS`, which `reproduce
--help` and `reproduce NAME --help` print: one sub-parser per reproduction.

The composed benchmarks (`imagescope-cirr`, `fisd`) leave each triplet's reference image out of the ranking,
as they score (`evaluation.runner.left_out`); `--keep-reference` keeps it, and the run's header says which.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from interactive_ir.commands.argtypes import plain_path, whole
from interactive_ir.errors import BadInputError


@dataclass(frozen=True)
class Reproduction:
    name: str
    paper: str  # which figures, in words
    runs: tuple[tuple[str, str, str, float | tuple[float, ...]], ...]  # (label, data file in DIR, protocol,
    #   the paper's figure: its BRI, or with metric "hits" its Hits@k in percent at rounds 0..rounds)
    rounds: int = 10
    k: int = 10  # the paper's k (its protocol): fixed here, not config.DEFAULT_K
    metric: str = "bri"  # "bri": one figure per run; "hits": Hits@k (best so far) by round; "cir": CIR_COLUMNS
    queries_format: str = "auto"  # eval --queries-format of the data files
    stop_on_found: bool = False  # the simulated user stops once the target is shown
    rank_from: str = "index"  # eval --rank-from
    note: str = ""  # printed under the table
    exclude_shown: bool = False  # each round shows only images not shown before (Zhu et al.)
    needs_captions: str = ""  # which run adds the index's captions (said when index/ has none)
    metrics_k: str = ""  # eval --metrics-k ("": the metric's own)


FISD_TYPES = ("cardinality", "addition", "negation", "change", "background", "complex")  # Table 1's columns
FISD_TABLE1 = (  # Recall@1 (%) by type, then the average
    ("Pic2Word", (6.00, 39.00, 0.00, 24.00, 18.00, 41.00, 21.33)),
    ("Context-I2W", (14.00, 48.00, 0.00, 29.50, 27.50, 48.00, 27.83)),
    ("LinCIR", (5.50, 52.50, 1.50, 43.50, 36.50, 55.00, 32.42)),
    ("TransAgg", (15.50, 56.00, 2.00, 52.00, 26.00, 57.00, 34.75)),
    ("CLIP4CIR", (31.00, 67.50, 4.00, 65.00, 43.50, 72.00, 47.17)),
    ("BLIP4CIR+Bi", (35.50, 65.50, 3.50, 58.50, 42.50, 65.50, 45.17)),
    ("TG-CIR", (43.50, 69.00, 1.50, 64.50, 47.50, 65.50, 48.58)),
    ("CoVR*", (47.50, 70.00, 8.50, 77.00, 61.50, 70.00, 55.75)),
    ("CIReVL", (24.00, 53.50, 17.50, 61.00, 40.00, 69.00, 44.17)),
    ("SPRC", (41.00, 66.50, 9.50, 73.00, 48.50, 62.00, 50.08)),
    ("SPN4CIR", (58.50, 69.50, 13.00, 77.00, 56.00, 61.00, 55.83)),
)

CIR_COLUMNS = ("recall@1", "recall@5", "recall@10", "recall@50",
               "recall_subset@1", "recall_subset@2", "recall_subset@3")  # at round 0, in percent

ZHU_KS = (20, 40, 60, 80, 100, 120)  # Zhu et al.'s Table 2 single-turn Recall@K
ZHU_SINGLE_TURN = (("CLIP", (36.64, 45.69, 51.01, 54.75, 57.73, 60.08)),  # Table 2, "Single Turn" (%)
                   ("BLIP-2", (36.87, 46.45, 52.06, 55.98, 58.91, 61.30)))
ZHU_TABLE2 = {  # Table 2: accumulated recall (%) at turns 0-5, 20 images a turn, by retriever
    "Rocchio": (("CLIP", (36.64, 57.53, 60.12, 60.71, 60.88, 60.92)),
                ("BLIP-2", (36.87, 55.71, 58.87, 59.67, 59.88, 59.92))),
    "Captions Only": (("CLIP", (36.64, 51.01, 58.18, 63.11, 66.58, 69.34)),
                      ("BLIP-2", (36.87, 51.92, 58.98, 63.64, 66.65, 69.33))),
}


REPRODUCTIONS = {
    "plugir-table1": Reproduction(
        "plugir-table1", "PlugIR Table 1, VisDial val, BLIP retriever (BRI, lower is better)",
        (("ZS", "zs.json", "fixed-dialogue:concat", 1.0006), ("PlugIR", "plugir.json", "fixed-dialogue:split", 0.7674))),
    "chatir": Reproduction(
        "chatir", "ChatIR (Levy et al. 2023; FT in PlugIR Table 12), VisDial val, Hits@10 (%) by round",
        (("ChatIR", "dialogues.json", "fixed-dialogue:concat",
          (71.5, 76.2, 78.9, 80.5, 82.0, 83.3, 84.4, 84.9, 85.6, 86.1, 86.4)),), metric="hits"),
    "imagescope-cirr": Reproduction(
        "imagescope-cirr", "ImageScope Tables 2 and 4, CIRR test1: Recall@K and Recall_subset@K (%)",
        (("ImageScope", "cap.rc2.val.json", "composed:imagescope",
          (("CLIP-ViT-B/32", (38.43, 66.27, 76.96, 91.83, 75.93, 89.21, 94.63)),
           ("CLIP-ViT-L/14", (39.37, 67.54, 78.05, 92.94, 76.36, 89.40, 95.21)))),),
        rounds=0, metric="cir", queries_format="cirr", stop_on_found=True, rank_from="results",
        note="the paper's figures are CIRR test1 (scored by the CIRR server); this run scores the file given, "
             "so the difference is across splits as well as systems"),
    "fisd": Reproduction(
        "fisd", "A sanity check on CIR, Table 1, FISD: Recall@1 (%) by instruction type",
        (("FISD", "fisd.json", "composed:compose", FISD_TABLE1),), rounds=0, metric="fisd", queries_format="fisd",
        stop_on_found=True),
    "zhu-msrvtt": Reproduction(
        "zhu-msrvtt", "Query rewriting with feedback (Zhu et al.) Table 2, MSR-VTT frames: accumulated recall (%) "
        "by turn, 20 images a turn",
        (("Rocchio", "queries.jsonl", "rocchio", ZHU_TABLE2["Rocchio"]),
         ("Captions Only", "queries.jsonl", "feedback:expand", ZHU_TABLE2["Captions Only"])),
        rounds=5, k=20, metric="accumulated", exclude_shown=True, metrics_k=",".join(map(str, ZHU_KS)),
        needs_captions="Captions Only",
        note="the paper's run is every sentence of the 10,000 clips (200,000 queries) over 100,000 frames, a "
             "CLIP ViT-L/14@336px or BLIP-2 retriever, and relevant frames captioned by InstructBLIP (vicuna-7b, "
             "'<Image> A short image caption:'): build index/ with those (index --captioner) to compare; an index "
             "without captions has no caption to add, so Captions Only falls back to Rocchio. The LLM columns "
             "(summary, keywords, CoT) run with eval --preset zhu --protocol feedback:cot --llm SPEC and "
             "IIR_FEEDBACK_REWRITE_FROM=2 (LLM editing only after turn 1)"),
}


@dataclass(frozen=True)
class Layout:
    """What `reproduce NAME --data DIR` needs in DIR, for its help."""

    files: tuple[tuple[str, str], ...]  # (path in DIR, what it holds: the fields read)
    source: str  # where to get the data
    commands: tuple[str, ...]  # the exact commands, from the downloads to the run
    note: str = ""  # how the run differs from the paper's, when it does


LAYOUTS = {
    "plugir-table1": Layout(
        (("index/", "an index of the search space, built with a BLIP retriever as in the paper (blip:SPEC): the "
                    "VisDial 1.0 val images (the targets) and ChatIR's COCO unlabeled2017 images"),
         ("zs.json", "the ZS dialogues, ChatIR layout: a list of {\"img\": target path, \"dialog\": [caption, "
                     "\"question? answer\", ...]} (an LLM questioner not aligned to the retrieval context, e.g. "
                     "ChatIR's dialogues/ChatGPT_BLIP2.json); scored by ChatIR's concatenation"),
         ("plugir.json", "PlugIR's released dialogues (same layout; the round-t entry is that round's reformulated "
                         "query): dialogues/ours_final_q_n_5_recall_hitting_10_thres_low_500_recon_true_referring_"
                         "true_filtering_true_select_true_reconed.json")),
        "images: https://visualdialog.org/data (VisualDialog_val2018.zip) and "
        "http://images.cocodataset.org/zips/unlabeled2017.zip; the search space: "
        "github.com/levymsn/ChatIR ChatIR_Protocol/Search_Space_val_50k.json; dialogues: github.com/levymsn/ChatIR "
        "dialogues/ and github.com/Saehyung-Lee/PlugIR dialogues/",
        ("git clone https://github.com/levymsn/ChatIR && git clone https://github.com/Saehyung-Lee/PlugIR",
         "# IMAGES/: unlabeled2017/ and VisualDialog_val2018/ unzipped",
         "python -c \"import json; print(*json.load(open('ChatIR/ChatIR_Protocol/Search_Space_val_50k.json')), "
         "sep='\\n')\" > IMAGES/space.txt",
         "(cd IMAGES && ls VisualDialog_val2018/*.jpg) >> IMAGES/space.txt",
         "python -m interactive_ir index --images IMAGES --image-list IMAGES/space.txt "
         "--embedder blip:Salesforce/blip-itm-large-coco --out DIR/index",
         "cp ChatIR/dialogues/ChatGPT_BLIP2.json DIR/zs.json",
         "cp PlugIR/dialogues/ours_final_*_reconed.json DIR/plugir.json",
         "python -m interactive_ir reproduce plugir-table1 --data DIR")),
    "chatir": Layout(
        (("index/", "the same search space as plugir-table1, built with ChatIR's fine-tuned BLIP retriever (blip:"
                    "FOLDER of the fine-tuned checkpoint) to match the paper"),
         ("dialogues.json", "ChatIR's dialogues/VisDial_v1.0_queries_val.json (VisDial val: human questions and "
                            "answers), ChatIR layout {\"img\", \"dialog\": [caption, \"q a\", ...]}")),
        "github.com/levymsn/ChatIR (dialogues/, ChatIR_Protocol/); images as for plugir-table1",
        ("# IMAGES/space.txt as for plugir-table1",
         "cp ChatIR/dialogues/VisDial_v1.0_queries_val.json DIR/dialogues.json",
         "python -m interactive_ir index --images IMAGES --image-list IMAGES/space.txt --embedder blip:FT_FOLDER "
         "--out DIR/index",
         "python -m interactive_ir reproduce chatir --data DIR")),
    "imagescope-cirr": Layout(
        (("index/", "an index of the CIRR images of the split (NLVR2 raw images, e.g. img_raw/dev/*.png), built "
                    "with the paper's CLIP (hf:openai/clip-vit-base-patch32 or hf:openai/clip-vit-large-patch14)"),
         ("cap.rc2.val.json", "CIRR's captions: a list of {pairid, reference, target_hard, caption, img_set: "
                              "{members}} (members: the Recall_subset group)")),
        "captions and splits: github.com/Cuberick-Orion/CIRR (captions/, image_splits/); images: the NLVR2 raw "
        "images, as CIRR's README says",
        ("python -c \"import json; print(*(p[2:] for p in json.load(open('CIRR/image_splits/split.rc2.val.json'))"
         ".values()), sep='\\n')\" > val.txt",
         "python -m interactive_ir index --images img_raw --image-list val.txt "
         "--embedder hf:openai/clip-vit-large-patch14 --captioner SPEC --out DIR/index",
         "cp CIRR/captions/cap.rc2.val.json DIR/",
         "python -m interactive_ir reproduce imagescope-cirr --data DIR --llm SPEC [--vlm SPEC]"),
        "the paper's figures are CIRR test1 (server-scored, targets not released): a val run differs by split too"),
    "fisd": Layout(
        (("index/", "an index of the FISD images (reference, target and hard negative of every triplet)"),
         ("fisd.json", "the FISD triplets, a JSON list or JSONL of {reference, target, instruction (or caption / "
                       "relative_caption), type, id}; type names the Table 1 column (cardinality, addition, negation, "
                       "change, background, complex)")),
        "the FISD release of 'A Sanity Check on Composed Image Retrieval' (its project page); image ids are matched "
        "to the index by file name stem",
        ("python -m interactive_ir index --images FISD/images --embedder SPEC --out DIR/index",
         "cp FISD/fisd.json DIR/",
         "python -m interactive_ir reproduce fisd --data DIR"),
        "the paper ranks each type within its own 600 images; one index of all types is a harder gallery"),
    "zhu-msrvtt": Layout(
        (("index/", "the picked MSR-VTT frames (FRAMES/<video_id>/000001.jpg ...), with --captioner for the "
                    "captions 'Captions Only' adds"),
         ("queries.jsonl", "written by `queries --frames`: one query per sentence, {target, relevant: the clip's "
                           "other picked frames, description, captions}")),
        "annotations: https://github.com/ArrowLuo/CLIP4Clip/releases/download/v0.0/msrvtt_data.zip; clips: "
        "https://www.robots.ox.ac.uk/~maxbain/frozen-in-time/data/MSRVTT.zip",
        ("scripts/msrvtt_frames.sh MSRVTT/videos/all frames",
         "python -m interactive_ir queries --captions msrvtt_data/MSRVTT_data.json --frames frames "
         "--out-image-list frames.txt --out-queries DIR/queries.jsonl",
         "python -m interactive_ir index --images frames --image-list frames.txt --embedder SPEC --captioner SPEC "
         "--out DIR/index",
         "python -m interactive_ir reproduce zhu-msrvtt --data DIR")),
}


def layout_help(name: str, width: int = 100) -> str:
    """`reproduce NAME --help`'s text on the data: DIR's files and fields, where to get them, the commands."""
    import textwrap

    rep, lay = REPRODUCTIONS[name], LAYOUTS[name]
    wrap = lambda text, first, rest: textwrap.fill(text, width, initial_indent=first,  # noqa: E731
                                                   subsequent_indent=rest, break_on_hyphens=False,
                                                   break_long_words=False)
    out = [wrap(f"{name}: {rep.paper}.", "", "  "), "", "DIR (--data) holds:"]
    out += [wrap(what, f"  {path:<16} ", " " * 19) for path, what in lay.files]
    out += ["", wrap(f"Get them: {lay.source}.", "", "  "), "", "Commands:"]
    out += [f"  {c}" for c in lay.commands]
    if lay.note:
        out += ["", wrap(f"Note: {lay.note}.", "", "  ")]
    return "\n".join(out)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """One sub-parser per reproduction, each with its data layout as its help (`layout_help`)."""
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = "\n\n".join(layout_help(name) for name in REPRODUCTIONS)
    sub = p.add_subparsers(dest="name", metavar="NAME", required=True,
                           help=f"what to reproduce: {', '.join(REPRODUCTIONS)} (NAME --help: its data)")
    for name, rep in REPRODUCTIONS.items():
        one = sub.add_parser(name, help=rep.paper.replace("%", "%%"), description=layout_help(name),
                             formatter_class=argparse.RawDescriptionHelpFormatter)
        _add_options(one)


def _add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, type=plain_path, metavar="DIR", help="folder with the paper's data (see above)")
    p.add_argument("--out", type=plain_path, default=None, help="output folder (default runs/reproduce/NAME)")
    p.add_argument("--embedder", default=None, help="embedder spec (default: the index manifest's)")
    p.add_argument("--llm", default=None, help="LLM spec, for reproductions whose protocol needs one")
    p.add_argument("--vlm", default=None, help="VLM spec, for reproductions that re-rank with one (ImageScope 2-3)")
    p.add_argument("--limit", type=whole(1), default=None, help="only the first Q dialogues (a quick check)")
    p.add_argument("--keep-reference", action="store_true",
                   help="composed benchmarks: keep each triplet's reference image in the ranking (default: left "
                        "out, as the benchmarks score)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _check_data(rep: Reproduction, data: Path) -> None:
    if not data.is_dir():
        raise BadInputError(f"--data {data} is not a folder: download the {rep.name} data into one (see "
                            "`python -m interactive_ir reproduce --help`)")
    need = ["index/manifest.json", *(f for _, f, _, _ in rep.runs)]
    missing = [f for f in need if not (data / f).is_file()]
    if missing:
        raise BadInputError(f"{data} lacks {', '.join(missing)}: {rep.name} needs index/ (an index of the images) "
                            f"and {', '.join(f for _, f, _, _ in rep.runs)} (the paper's released files)")


def run(args: argparse.Namespace) -> int:
    """check the data -> run `eval` for each of the paper's runs -> read each run's figures -> print them
    beside the paper's."""
    from interactive_ir.commands import eval_cmd

    rep = REPRODUCTIONS.get(args.name.strip().lower())
    if rep is None:
        raise BadInputError(f"unknown reproduction {args.name!r}; choose one of {', '.join(REPRODUCTIONS)}")
    _check_data(rep, args.data)
    if rep.metric == "accumulated":
        _need_relevant(rep, args.data)
    if rep.needs_captions and not _has_captions(args.data / "index"):
        print(f"note: {args.data / 'index'} holds no captions, so {rep.needs_captions} has none to add and falls back "
              "to Rocchio: build the index with --captioner SPEC (the paper: InstructBLIP) to compare")
    out = args.out or Path("runs") / "reproduce" / rep.name
    rows = []
    for label, data_file, protocol, paper in rep.runs:
        folder = out / label.lower().replace(" ", "-")
        p = argparse.ArgumentParser(prog="eval")
        eval_cmd.add_arguments(p)
        print(f"== {rep.name}: {label} ({protocol}, {data_file}){_reference_note(rep, args)}")
        eval_cmd.run(p.parse_args(_eval_argv(rep, args, data_file, protocol, folder)))
        rows.append(_row(rep, args, label, data_file, protocol, paper, folder / protocol.replace(":", "-")))
    print(f"\n{rep.paper}\n")
    return _print_rows(rep, rows)


def _eval_argv(rep: Reproduction, args: argparse.Namespace, data_file: str, protocol: str, folder: Path) -> list[str]:
    """The `eval` command line of one of the paper's runs."""
    argv = ["--index", str(args.data / "index"), "--queries", str(args.data / data_file), "--protocol", protocol,
            "--rounds", str(rep.rounds), "-k", str(rep.k),
            "--exclude-shown" if rep.exclude_shown else "--no-exclude-shown",
            "--stop-on-found" if rep.stop_on_found else "--no-stop-on-found", "--rank-from", rep.rank_from,
            "--queries-format", rep.queries_format, "--out", str(folder)]
    if rep.metric == "cir":
        argv += ["--metrics-k", "1,5,10,50"]
    elif rep.metrics_k:
        argv += ["--metrics-k", rep.metrics_k]
    for flag, value in (("--embedder", args.embedder), ("--llm", args.llm), ("--vlm", getattr(args, "vlm", None)),
                        ("--limit", args.limit)):
        if value is not None:
            argv += [flag, str(value)]
    if getattr(args, "keep_reference", False):
        argv.append("--keep-reference")
    if args.no_progress:
        argv.append("--no-progress")
    return argv


def _reference_note(rep: Reproduction, args: argparse.Namespace) -> str:
    """The run's header: what it does with a composed benchmark's reference images ("" for the others)."""
    if rep.queries_format not in ("cirr", "fashioniq", "circo", "fisd"):
        return ""
    if getattr(args, "keep_reference", False):
        return "; reference images KEPT in the ranking (--keep-reference), unlike the benchmark"
    return "; reference images left out of the ranking, as the benchmark scores (--keep-reference keeps them)"


def _row(rep: Reproduction, args: argparse.Namespace, label: str, data_file: str, protocol: str, paper,
         folder: Path) -> tuple:
    """One run's figures beside the paper's, as its metric's table prints them (`folder`: the protocol's)."""
    metrics = json.loads((folder / "metrics.json").read_text())
    if rep.metric == "accumulated":
        got = [100 * x for x in metrics["accumulated_recall"]]
        single = [100 * metrics[f"relevant_recall@{k}"][0] if f"relevant_recall@{k}" in metrics else None
                  for k in ZHU_KS]
        return (label, paper, got, metrics["n_queries"], metrics.get("not_comparable"), single)
    if rep.metric == "hits":
        return (label, paper, [100 * h for h in metrics[f"hits@{rep.k}"]], metrics["n_queries"])
    if rep.metric == "fisd":
        ranks = json.loads((folder / "ranks.json").read_text())
        return (label, paper, _fisd_by_type(args.data / data_file, ranks), metrics["n_queries"],
                metrics.get("not_comparable"))
    if rep.metric == "cir":
        got = [100 * metrics[c][0] if c in metrics else None for c in CIR_COLUMNS]
        return (label, paper, got, metrics["n_queries"], metrics.get("not_comparable"))
    return (label, paper, metrics["bri"], metrics["n_queries"], metrics.get("intervals", {}).get("bri"))


def _print_rows(rep: Reproduction, rows: list[tuple]) -> int:
    """The table of `rep`'s metric (and its note); the command's exit status."""
    if rep.metric == "hits":
        return _print_by_round(rows, rep.rounds)
    if rep.metric == "accumulated":
        _print_accumulated(rows, rep.rounds)
        print(f"\nnote: {rep.note}")
        return 0
    if rep.metric == "fisd":
        _print_fisd(rows)
        return 0
    if rep.metric == "cir":
        _print_cir(rows)
        print(f"\nnote: {rep.note}")
        return 0
    print("| method | paper | this run [95% CI] | difference | dialogues |")
    print("|---|---|---|---|---|")
    for label, paper, got, n, ci in rows:
        ci_text = f" [{ci[0]:.4f}, {ci[1]:.4f}]" if ci else ""
        print(f"| {label} | {paper:.4f} | {got:.4f}{ci_text} | {got - paper:+.4f} | {n} |")
    return 0


def _print_by_round(rows, rounds: int) -> int:
    """The paper's figure, the run's and the difference, one column per round."""
    print("| method | | " + " | ".join(str(t) for t in range(rounds + 1)) + " | dialogues |")
    print("|---|---|" + "---|" * (rounds + 2))
    for label, paper, got, n in rows:
        got = (list(got) + list(got[-1:]) * (rounds + 1))[: rounds + 1]
        print(f"| {label} | paper | " + " | ".join(f"{x:.1f}" for x in paper) + " | |")
        print(f"| {label} | this run | " + " | ".join(f"{x:.1f}" for x in got) + f" | {n} |")
        print(f"| {label} | difference | " + " | ".join(f"{g - x:+.1f}" for g, x in zip(got, paper)) + " | |")
    return 0


def _print_cir(rows) -> None:
    """Each of the paper's rows, the run's, and the run minus each paper row (a dash: not measured)."""
    names = ("R@1", "R@5", "R@10", "R@50", "Rs@1", "Rs@2", "Rs@3")
    print("| method | | " + " | ".join(names) + " | queries |")
    print("|---|---|" + "---|" * (len(names) + 1))
    fmt = lambda xs: " | ".join("-" if x is None else f"{x:.2f}" for x in xs)  # noqa: E731
    for label, paper, got, n, not_comparable in rows:
        for retriever, figures in paper:
            print(f"| {label} | paper, {retriever} | {fmt(figures)} | |")
        mark = " (NOT A COMPARISON: " + not_comparable + ")" if not_comparable else ""
        print(f"| {label} | this run{mark} | {fmt(got)} | {n} |")
        for retriever, figures in paper:
            diff = " | ".join("-" if g is None else f"{g - x:+.2f}" for g, x in zip(got, figures))
            print(f"| {label} | minus {retriever} | {diff} | |")


def _fisd_by_type(path: Path, ranks: dict) -> tuple[list[float | None], dict[str, int]]:
    """Round-0 Recall@1 (%) per Table 1 column (None: no query of that type) and the average of the measured
    columns; with the number of queries per column ("other": types that match no column)."""
    from interactive_ir.evaluation.datasets.triplets import load_triplets

    hits: dict[str, list[float]] = {}
    for q in load_triplets("fisd", path):
        if q.qid not in ranks:
            continue
        kind = str(q.meta.get("type", "")).strip().lower()
        column = next((t for t in FISD_TYPES if kind.startswith(t)), "other")
        hits.setdefault(column, []).append(100.0 if ranks[q.qid][0] <= 1 else 0.0)
    by_type = [sum(hits[t]) / len(hits[t]) if t in hits else None for t in FISD_TYPES]
    measured = [x for x in by_type if x is not None]
    return by_type + [sum(measured) / len(measured) if measured else None], {t: len(v) for t, v in hits.items()}


def _print_fisd(rows) -> None:
    names = ("Cardinality", "Addition", "Negation", "Change", "Background", "Complex Inst.", "Average")
    fmt = lambda xs: " | ".join("-" if x is None else f"{x:.2f}" for x in xs)  # noqa: E731
    for _label, paper, (got, counts), n, not_comparable in rows:
        print("| model | " + " | ".join(names) + " | this run's average minus it |")
        print("|---|" + "---|" * (len(names) + 1))
        for model, figures in paper:
            diff = "-" if got[-1] is None else f"{got[-1] - figures[-1]:+.2f}"
            print(f"| {model} (paper) | {fmt(figures)} | {diff} |")
        mark = " (NOT A COMPARISON: " + not_comparable + ")" if not_comparable else ""
        print(f"| this run{mark} | {fmt(got)} | |")
        print("\nqueries by type: " + ", ".join(f"{t} {c}" for t, c in counts.items()) + f" ({n} in all); the "
              "average is over the measured types")


def _need_relevant(rep: Reproduction, data: Path) -> None:
    """Refuse, before any run, a queries file whose queries have no other relevant images."""
    from interactive_ir.evaluation.queries import read_queries

    for data_file in dict.fromkeys(f for _, f, _, _ in rep.runs):
        path = data / data_file
        if not any(q.relevant for q in read_queries(path)):
            raise BadInputError(f"{path} gives its queries no other relevant images, so accumulated recall is "
                                "undefined: write it with `queries --captions videodatainfo.json --frames FRAMES "
                                "--out-image-list frames.txt --out-queries queries.jsonl` (MSR-VTT)")


def _print_accumulated(rows, rounds: int) -> None:
    """Accumulated recall by turn: each of the paper's retriever rows, the run's, and the run minus each; then the
    single-turn Recall@K of the relevant images beside the paper's."""
    fmt = lambda xs: " | ".join("-" if x is None else f"{x:.2f}" for x in xs)  # noqa: E731
    print("| method | | " + " | ".join(f"turn {t}" for t in range(rounds + 1)) + " | queries |")
    print("|---|---|" + "---|" * (rounds + 2))
    for label, paper, got, n, not_comparable, _single in rows:
        got = (list(got) + list(got[-1:]) * (rounds + 1))[: rounds + 1]
        for retriever, figures in paper:
            print(f"| {label} | paper, {retriever} | {fmt(figures)} | |")
        mark = " (NOT A COMPARISON: " + not_comparable + ")" if not_comparable else ""
        print(f"| {label} | this run{mark} | {fmt(got)} | {n} |")
        for retriever, figures in paper:
            print(f"| {label} | minus {retriever} | " + " | ".join(f"{g - x:+.2f}" for g, x in zip(got, figures))
                  + " | |")
    single = rows[0][5]
    print("\nSingle turn: Recall@K of the relevant images at turn 0 (%)\n")
    print("| | " + " | ".join(f"R@{k}" for k in ZHU_KS) + " |")
    print("|---|" + "---|" * len(ZHU_KS))
    for retriever, figures in ZHU_SINGLE_TURN:
        print(f"| paper, {retriever} | {fmt(figures)} |")
    print(f"| this run | {fmt(single)} |")
    for retriever, figures in ZHU_SINGLE_TURN:
        print(f"| minus {retriever} | " + " | ".join("-" if g is None else f"{g - x:+.2f}"
                                                     for g, x in zip(single, figures)) + " |")


def _has_captions(index: Path) -> bool:
    """Whether the index stores captions (eval refuses a broken manifest later, with its own message)."""
    from interactive_ir.errors import IIRError
    from interactive_ir.index.store import load_index

    try:
        return load_index(index, store="").has_captions
    except IIRError:
        return True
