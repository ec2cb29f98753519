"""Learned routing policies: what a policy observes (`observation`, numpy), its checkpoints
(`checkpoint`, numpy + JSON) and the torch network itself (`actor_critic`, `controller`), which only a
router that builds a policy imports — `import debate` never loads torch."""
