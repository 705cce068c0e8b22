"""Checks of an answer against its evidence, without a model: its citations resolved and its uncited sentences
attributed (`citations`), the values it states and where they are written (`values`), the period they are of
(`periods`), its confidence and band (`confidence`), and whether a highlighted sentence may stand in for a refused or
failed answer (`quotes`). Beside the retrievers, below the stages that use them."""
