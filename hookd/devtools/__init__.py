"""Developer commands over recorded hooks, above the core and the daemon: ``hookd replay``
(:mod:`.replay`), ``hookd replay --into`` (:mod:`.feed`) and ``hookd drift`` (:mod:`.drift`)."""
