"""The hub (issue 25, docs/fleet.md): an optional PostgreSQL database that many hosts' daemons
ship their event logs to, for one operator view over many machines. SQLite stays each host's
store and authority; nothing on the hook path waits on the hub.

Modules: ``sql`` (all of the hub's SQL: schema, roles, shipping, reads), ``config`` (which hub:
``--hub``, ``HOOKD_HUB``, ``[hub] url``), ``shipper`` (the daemon's background task). asyncpg is
the optional extra ``hookd[hub]``, imported only where a hub is used.
"""
