"""The pick: the model copies the answer's value from a list of candidates taken from the evidence (`nodes.pick`)."""

PICK_SYSTEM = """You answer a question about a user's documents by choosing one of the options below, taken from them.
Each option is a value or a name, with what it is: a table's row and column, or the words around it.
Choose the option that answers the question exactly: the same thing, the same item or model, the same year or
period, the same unit. Copy its value exactly as written. If no option answers the question, write none."""

ONE = "Write the value of the option that answers the question, or none."
SEVERAL = "The question asks for more than one thing: write the value of the option that answers each, or none."

OPTIONS_HEADING = "Options (value | what it is):\n"
PICK_REQUEST = (
    """Question: {question}

"""
    + OPTIONS_HEADING
    + """{options}

{choose}"""
)

# how an option is shown: its value, and what it is
OPTION = "{value} | {measures}"
