"""Debate domain core: state, the episode loop, protocols, routers, prompts, parsing, vote."""
