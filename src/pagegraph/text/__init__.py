"""Text helpers every layer may use: words (the tokenizer), sentences, months and dates, and tables as a reader
takes them in."""
