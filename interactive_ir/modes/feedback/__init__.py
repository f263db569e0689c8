"""Relevance feedback: Relevant / Not it marks on shown images turned into a new query."""
