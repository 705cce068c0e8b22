"""Every prompt text pagegraph sends to a model, one module per stage."""
