"""`sweep report`: the debate papers' statistics (mean ± std over seeds, exact McNemar with Holm's
correction, Wilson intervals, Spearman rank correlation, the accuracy-cost Pareto front, per-round
curves and diagnostics) over sweep output dirs, as markdown, CSV/Parquet, PNG plots and one HTML page."""
