"""`sweep view`: a transcript viewer for sweep results — a local web page (127.0.0.1) over a JSON
API that pages through Parquet without loading all turns, or one static HTML export."""
