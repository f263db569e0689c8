"""The state of one search and the steps every mode shares: the session and its turns, text search
with the seen/hidden policy, typed step results, and the metering and log of model calls."""
