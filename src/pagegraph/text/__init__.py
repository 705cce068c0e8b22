"""Text helpers every layer may use: months and dates, and tables as a reader takes them in."""
