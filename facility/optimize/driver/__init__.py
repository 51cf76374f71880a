"""The driver: picks and chains the strategies for a problem (:mod:`.api`).

May import every other room of :mod:`facility.optimize`; nothing in the optimizer imports it.
Its public names are re-exported by :mod:`facility.optimize`.
"""
