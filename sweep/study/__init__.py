"""`sweep study`: Optuna studies over a method's arguments on one shared engine pool — the config
(`config`), the search-space checks against the method registry (`spaces`), the driver (`runner`),
storage and locks (`storage`), MLflow logging and plots (`tracking`) and the CLI (`cli`)."""
