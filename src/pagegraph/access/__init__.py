"""Who may do what, in one package, a module per side:

- `access.records`: the records of rights (`Access`, `ApiUser`, roles) and the `RetrievalFilter` every read of the
  index applies; plain data, at the bottom of the layers.
- `access.keys`: API keys and the users file (`pagegraph users`, and the server's sign-in).
- `access.runs`: the user running a graph, read from the run's config, and the filter narrowed to what they may read.
- `access.auth`: the LangGraph server's auth handler (`langgraph.json` names it): a request's key to its user, and
  threads, runs and store items kept to their owner.
"""
