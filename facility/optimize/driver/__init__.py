"""The driver: picks and chains the strategies for a problem (:mod:`.api`); a hybrid section's
candidates pruned by a bound before the hybrid's own solve (:mod:`.prune`).

May import every other room of :mod:`facility.optimize`; nothing in the optimizer imports it.
Its public names are re-exported by :mod:`facility.optimize`.
"""
