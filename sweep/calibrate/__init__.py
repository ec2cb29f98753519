"""`sweep calibrate`: fit a simulated population to a paper's published rows, then predict the rest."""
