"""The stages of the question-answering graphs: each a function of (state, runtime[, services]) returning an update."""
