"""The ways of searching, one package each: conversation (PlugIR and grounded questions), relevance
feedback, composed search (ImageScope)."""
