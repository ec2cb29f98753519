"""The sweep config and what every config file shares: the YAML reader with limits, bounded field types, `--set` overrides, the paths a config names, and the one-line error of every bad config."""
