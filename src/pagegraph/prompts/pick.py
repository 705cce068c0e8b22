"""The pick: the model copies the answer's value from a list of candidates taken from the evidence (`nodes.pick`)."""

PICK_SYSTEM = """You answer a question about a user's documents by choosing one of the options below, taken from them.
Each option says what a value is (a table's row and column, or the words of the sentence before it), then the value.
Choose the option that answers the question exactly: the same thing, the same item or model, the same year or
period, the same unit. Copy the option exactly as written, up to its value. If no option answers the question,
write none."""

ONE = "Copy the option that answers the question, or write none."
SEVERAL = "The question asks for more than one thing: copy the option that answers each, or write none."

OPTIONS_HEADING = "Options:\n"
PICK_REQUEST = (
    """Question: {question}

"""
    + OPTIONS_HEADING
    + """{options}

{choose}"""
)
