"""How much does a Closest click tell about the target, here? Issue 38's click-only goal, taken apart.

On the hard targets of a Flickr8k split (the same data as `bench_clicks.py`: caption 0 indexed with the text
embedder, caption 1 the description, captions 2-4 what the simulated user knows), this prints:

1. **Agreement.** On the description's first page, how often the judge's click (`rule_choice`, words or bm25)
   falls on the shown image nearest the target by the index's embedder, or by shared words of the index
   captions (chance: 1 in 10), and how often it is "none of these".
2. **Predictability.** A conditional-logit click model fitted on every image of the split as target (its
   description's first page), on the embedder's and the shared words' cosines: the click's mean log-likelihood
   against a model that ignores the target (how often "none of these", else any shown image). The gain is
   what a model built from the index's own captions can know of the target from a click (nats).
3. **Found % of a click-only user** in an offline replica of `eval --protocol user:click` (5 rounds of 10, the
   same judges and noise; within about 2 points of the evaluator, whose engine details it leaves out), with
   the belief's click model as configured, with the fitted one, and with the **exact judge** as the click
   model: the judge itself run with each candidate's own held-out captions. No engine has those captions
   (only one per image is indexed), so the exact row is a ceiling, not a method: the click carries that much
   information only to a model that knows what no index knows.

No simulated user here sees the target's id, rank or index caption; the exact-judge row's *model* reads every
candidate's held-out captions, which is why it is a ceiling and never a strategy.

Usage: python bench/click_information.py [--n 1000] [--split dev] [--judges words,bm25] [--noise 0.25]
       [--rounds 5] [-k 10] [--no-exact] [--data DIR] [--embedder text:all-MiniLM-L6-v2]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DATA = next((p for p in (ROOT.parent / "shared" / "data" / "flickr8k", Path("/work/shared/data/flickr8k"))
             if p.is_dir()), ROOT.parent / "shared" / "data" / "flickr8k")
K, ROUNDS = 10, 5


def load(data: Path, split: str, n: int, embedder: str):
    """(index captions, descriptions' rows, held-out captions, index rows) of the first `n` images of `split`."""
    from interactive_ir.backends import make_embedder

    rows = [json.loads(x) for x in open(data / "captions.jsonl", encoding="utf-8") if x.strip()]
    rows = [r for r in rows if r.get("split") == split][:n]
    emb = make_embedder(embedder)
    unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)  # noqa: E731
    index = unit(np.asarray(emb.embed_texts([r["captions"][0] for r in rows]), np.float32))
    query = unit(np.asarray(emb.embed_texts([r["captions"][1] for r in rows]), np.float32))
    return [r["captions"][0] for r in rows], query, [r["captions"][2:] for r in rows], index


def word_cosines(texts) -> np.ndarray:
    """Cosine of the index captions' content-word sets (`retrieval.words`: what the engine can compute)."""
    from interactive_ir.retrieval.words import content_words

    bags = [set(content_words(t)) for t in texts]
    vocab = {w: i for i, w in enumerate(sorted(set().union(*bags)))}
    x = np.zeros((len(texts), len(vocab)), np.float32)
    for r, b in enumerate(bags):
        x[r, [vocab[w] for w in b]] = 1.0
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)
    return x @ x.T


def lse(a: np.ndarray, axis: int) -> np.ndarray:
    m = a.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def first_page(scores: np.ndarray, leave_out: int | None = None) -> list[int]:
    order = [int(i) for i in np.argsort(-scores)[:K + 1] if i != leave_out]
    return order[:K]


def fit_logit(x: np.ndarray, y: np.ndarray, steps: int = 3000, lr: float = 5.0):
    """A conditional logit over the shown (features x: pages x K x F) and "none of these" (a constant):
    (weights, none logit, mean log-likelihood)."""
    w, b = np.zeros(x.shape[2]), 0.0
    for _ in range(steps):
        lg = np.concatenate([x @ w, np.full((len(x), 1), b)], 1)
        p = np.exp(lg - lse(lg, 1)[:, None])
        g = p.copy()
        g[np.arange(len(y)), y] -= 1
        w -= lr * np.einsum("nk,nkf->f", g[:, :K], x) / len(x)
        b -= lr * g[:, K].mean()
    return w, b, float(np.log(p[np.arange(len(y)), y]).mean())


class Replica:
    """The click-only user of `eval --protocol user:click` against the belief's update, offline and vectorised."""

    def __init__(self, ctx, judge, noise: float, loglik, text_temperature=0.05, overlook=0.01):
        self.ctx, self.judge, self.noise, self.loglik = ctx, judge, noise, loglik
        self.tt, self.overlook = text_temperature, overlook

    def found(self, qi: int) -> bool:
        from interactive_ir.evaluation.simulators import rule_choice

        c = self.ctx
        t, text = qi, c["S"][qi].astype(np.float64) / self.tt
        actions, seen = np.zeros(len(text)), np.zeros(len(text))
        page = first_page(c["S"][qi])
        for r in range(1, ROUNDS + 1):
            if t in page:
                return True
            choice = rule_choice(c["known"][qi], [c["texts"][i] for i in page], self.judge, 0.3).index
            rng = random.Random(f"click-information:{qi}:{r}")
            if rng.random() < self.noise:
                choice = rng.randrange(len(page))
            actions += self.loglik(page, choice)
            seen[page] += 1
            logp = text + actions + seen * math.log(self.overlook)
            logp[page] = -np.inf  # the page just seen is not shown again
            page = [int(i) for i in np.argsort(-logp)[:K]]
        return t in page


def softmax_loglik(ctx, weights, none_logit, eps):
    """log P(choice | every row) under a conditional logit on (embedder cosine, word cosine), with an error term."""
    def f(page, choice):
        feats = [ctx["EE"][:, page], ctx["WW"][:, page]]
        lg = sum(w * x for w, x in zip(weights, feats))
        lg = np.concatenate([lg, np.full((lg.shape[0], 1), none_logit)], 1)
        col = K if choice is None else choice
        model = lg[:, col] - lse(lg, 1)
        return np.logaddexp(np.log1p(-eps) + model, np.log(eps / (K + 1)))
    return f


def exact_loglik(ctx, judge, eps):
    """log P(choice | every row) when the click model is the judge itself with each row's held-out captions."""
    from interactive_ir.evaluation.simulators import rule_choice

    def f(page, choice):
        shown = [ctx["texts"][i] for i in page]
        picks = np.array([K if (c := rule_choice(ctx["known"][i], shown, judge, 0.3).index) is None else c
                          for i in range(len(ctx["texts"]))])
        col = K if choice is None else choice
        return np.log((1 - eps) * (picks == col) + eps * (col < K) / K + 1e-12)
    return f


def main(argv=None) -> None:
    global K, ROUNDS  # noqa: PLW0603 - the script's page size and rounds, set once from the flags
    from interactive_ir.evaluation.similarity import make_similarity
    from interactive_ir.evaluation.simulators import rule_choice

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--split", default="dev")
    ap.add_argument("--judges", default="words,bm25")
    ap.add_argument("--noise", type=float, default=0.25)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--embedder", default="text:all-MiniLM-L6-v2")
    ap.add_argument("--rounds", type=int, default=ROUNDS, help="rounds after the description's page")
    ap.add_argument("-k", type=int, default=K, help="images per page")
    ap.add_argument("--no-exact", action="store_true", help="leave out the exact-judge ceiling (the slow row)")
    a = ap.parse_args(argv)
    K, ROUNDS = a.k, a.rounds
    t0 = time.time()
    texts, query, known, index = load(a.data, a.split, a.n, a.embedder)
    S = query @ index.T
    ctx = {"texts": texts, "known": known, "S": S, "EE": index @ index.T, "WW": word_cosines(texts)}
    rank = np.array([int((S[i] > S[i, i]).sum()) for i in range(len(texts))])
    hard = [int(i) for i in np.flatnonzero(rank >= K)]
    if not hard:
        raise SystemExit(f"no hard targets: every description of the {len(texts)} images ranks its image in the "
                         f"first {K}; use more images (--n) or a smaller page (-k)")
    paging = 100 * float(np.mean(rank[hard] < K * (ROUNDS + 1)))
    print(f"{a.split} split, N = {len(texts)}, {len(hard)} hard targets, {ROUNDS} rounds of {K}; paging finds "
          f"{paging:.1f}%", flush=True)
    for jn in a.judges.split(","):
        judge = make_similarity(jn)
        xs, ys, agree_e, agree_w, none = [], [], 0, 0, 0
        for i in range(len(texts)):
            page = first_page(S[i], leave_out=i)  # the target off the page: what a click on it says of it
            c = rule_choice(known[i], [texts[j] for j in page], judge, 0.3).index
            xs.append(np.stack([ctx["EE"][i, page], ctx["WW"][i, page]], 1))
            ys.append(K if c is None else c)
            if i in hard:
                none += c is None
                agree_e += c is not None and c == int(np.argmax(ctx["EE"][i, page]))
                agree_w += c is not None and c == int(np.argmax(ctx["WW"][i, page]))
        x, y = np.array(xs), np.array(ys)
        w, b, ll = fit_logit(x, y)
        _, _, ll0 = fit_logit(np.zeros_like(x[:, :, :1]), y)  # no target in it: how often "none", else uniform
        clicked = len(hard) - none
        print(f"\n## judge {jn}\n- first page of the hard targets: {none}/{len(hard)} 'none of these'; of the "
              f"{clicked} clicks, {agree_e} on the image nearest the target by the embedder and {agree_w} by "
              f"shared words (chance: {clicked / K:.0f})", flush=True)
        print(f"- fitted click model (every image as target): weights embedder {w[0]:.2f}, words {w[1]:.2f}, "
              f"none {b:.2f}; log-likelihood {ll:.3f} per click against {ll0:.3f} for a model that ignores the "
              f"target: {ll - ll0:.3f} nats of a click's information about the target (a 1-in-10 choice holds "
              f"{math.log(K):.2f})", flush=True)
        print("\n| click model | noise | found % | vs paging (points) |\n|---|---|---|---|", flush=True)
        from interactive_ir.retrieval.belief import BeliefConfig

        cfg = BeliefConfig()
        t = cfg.click_temperature
        models = [("the belief's (as configured)", softmax_loglik(ctx, (1 / t, 0.0), cfg.none_similarity / t,
                                                                    cfg.click_error)),
                  ("fitted on this split", softmax_loglik(ctx, tuple(w), b, max(a.noise, 0.02)))]
        if not a.no_exact:
            models.append(("exact judge (a ceiling: reads every candidate's held-out captions)",
                           exact_loglik(ctx, judge, max(a.noise, 0.02))))
        for name, f in models:
            for noise in sorted({0.0, a.noise}):
                rep = Replica(ctx, judge, noise, f)
                got = 100 * float(np.mean([rep.found(q) for q in hard]))
                print(f"| {name} | {noise:.2f} | {got:.1f} | {got - paging:+.1f} |", flush=True)
    print(f"\n{time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
