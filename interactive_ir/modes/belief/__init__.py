"""The belief over the collection: the web page's default way of searching (every action is evidence)."""
