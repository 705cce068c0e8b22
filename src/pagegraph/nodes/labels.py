"""How a run's stages are named to the person watching it (the terminal and the web page alike)."""

from __future__ import annotations

# What the user is told each stage is doing (stages not listed work silently).
STAGE_LABELS = {
    "rewrite_followup": "reading the conversation",
    "choose": "choosing how to answer",
    "route": "choosing documents",
    "plan": "planning the search",
    "plan_search": "planning the search",
    "retrieve": "searching",
    "search": "searching",
    "find_files": "choosing documents",
    "select": "choosing sections",
    "expand_tree": "reading the section tree",
    "map_chunk": "reading passages",
    "pick": "picking the answer among the evidence's values",
    "judge": "checking the answer against the evidence",
    "verify": "checking citations",
}
# The stages whose model tokens are the answer itself, streamed as they come.
ANSWER_NODES = ("answer", "reduce", "read")
