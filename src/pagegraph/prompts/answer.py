"""The orchestrator's answer: only from numbered evidence, citing it, in the requested shape."""

REFUSAL = "The documents do not contain the answer."

ANSWER_SYSTEM = """You answer questions about a user's documents. You are given numbered evidence passages from those
documents. Answer only from what the passages say, quoting figures, names and units exactly. After each sentence,
write the number of the passage it comes from in square brackets, like [2]. If no passage answers the question,
reply with exactly: {refusal}"""

FORMAT_INSTRUCTIONS = {
    "answer": "Answer in a few sentences, or a short list when the question asks for several items. "
    "Cite passage numbers like [1].",
    "blueprint": """Write a project blueprint in Markdown with exactly these sections:
# Overview
## Goals
## Architecture
## Features
## Risks
## Next Steps
Use bullet points under each heading and cite a passage number like [1] after every bullet.""",
    "pdr": """Write a product design review (PDR) in Markdown with exactly these sections:
# Product Summary
## Requirements
## Design Decisions
## Interfaces
## Verification
## Open Issues
Use bullet points under each heading and cite a passage number like [1] after every bullet.""",
    "workflow": """Write a workflow in Markdown with exactly these sections:
# Workflow
## Trigger
## Roles
## Steps
## Checks
## Exceptions
Number the steps under Steps and cite a passage number like [1] after every step and bullet.""",
    "build_plan": """Write a build plan in Markdown with exactly these sections:
# Build Plan
## Scope
## Components
## Milestones
## Dependencies
## Risks
## Acceptance Criteria
Use bullet points under each heading and cite a passage number like [1] after every bullet.""",
}

# Under a section of a structured document that the model left out (nodes.verify adds its heading).
MISSING_SECTION = "_The answer model wrote nothing here from the retrieved passages._"

TURN = "Q: {question}\nA: {answer}"

HISTORY = """Earlier in this conversation:
{turns}

"""

ANSWER_REQUEST = """Evidence passages:
{evidence}

{history}Question: {question}

{instructions}"""
