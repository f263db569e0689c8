"""ImageScope: stage 1 semantic synthesis (reasoner -> three target descriptions), stage 2
predicate verification and stage 3 pairwise evaluation (optional re-ranking with a VLM).

`prompts` builds the prompts of Figures 10 to 12, `parsers` reads the replies (junk-proof, JSON repaired),
`rerank` applies the verifier counts and evaluator decisions to a ranked list.
"""
