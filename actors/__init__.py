"""LLM engines behind one async `Backend` protocol (see `actors.base`)."""
