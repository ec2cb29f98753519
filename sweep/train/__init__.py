"""`sweep train`: learning a router's policy from debate episodes on the engine pool — the config
(`config`), the PPO program itself (`ppo`, one file, top to bottom), checkpoints and resume (`state`),
MLflow logging and MLflow checkpoint URIs (`tracking`) and the CLI (`cli`)."""
