"""The pick: the model chooses the answer among lettered candidates taken from the evidence (`nodes.pick`)."""

PICK_SYSTEM = """You answer a question about a user's documents by choosing among lettered options taken from them.
Each option is a value, a name or a sentence, with what it is: a table's row and column, or the words around it.
Choose the option that answers the question exactly: the same thing, the same item or model, the same year or
period, the same unit. If no option answers the question, choose "none"."""

ONE = "Choose one letter, or none."
SEVERAL = "The question asks for more than one thing: choose one letter for each, or none."

PICK_REQUEST = """Question: {question}

Options:
{options}

{choose}"""

# how an option is shown: its letter, its value, and what it is
CELL_OPTION = "{letter}. {value} | {measures}"
VALUE_OPTION = '{letter}. {value} | "{measures}"'
SENTENCE_OPTION = '{letter}. "{value}"'
