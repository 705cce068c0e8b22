"""Configuration: machine-level `Settings` read from the environment (`config.settings`) and the question graphs'
per-run `Context` (`config.context`)."""

from pagegraph.config.context import (
    ConfidenceKnobs,
    Context,
    GateKnobs,
    PageIndexKnobs,
    PageRules,
    PickingKnobs,
    ReadingKnobs,
    RetrievalKnobs,
    RoutingWeights,
    SentenceWeights,
    SmallModelKnobs,
    TreeKnobs,
)
from pagegraph.config.settings import (
    SERVER_FOLDER,
    IngestSettings,
    LimitSettings,
    ModelSettings,
    ServerSettings,
    Settings,
    SettingsError,
    StorageSettings,
    data_home,
    get_settings,
)

__all__ = [
    "SERVER_FOLDER",
    "ConfidenceKnobs",
    "Context",
    "GateKnobs",
    "IngestSettings",
    "LimitSettings",
    "ModelSettings",
    "PageIndexKnobs",
    "PageRules",
    "PickingKnobs",
    "ReadingKnobs",
    "RetrievalKnobs",
    "RoutingWeights",
    "SentenceWeights",
    "ServerSettings",
    "Settings",
    "SettingsError",
    "SmallModelKnobs",
    "StorageSettings",
    "TreeKnobs",
    "data_home",
    "get_settings",
]
