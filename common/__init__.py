"""The ground floor: small helpers every other package may use and that import nothing of the
project (`names`: the did-you-mean hint and the one-line unknown-name error of every registry)."""
