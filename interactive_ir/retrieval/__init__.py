"""Ranking an index for a query: the retriever and where its search runs."""
