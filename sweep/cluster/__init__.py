"""`sweep cluster up|down|status`: a private one-machine Ray head that `ray job submit` reaches as typed."""
