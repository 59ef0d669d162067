"""What the daemon runs beside the hook path, above the core: lanes (:mod:`.lanes`), the
notifier (:mod:`.notify`), the transcript tailer (:mod:`.tailer`) and the folder watching they
and the spool share (:mod:`.watch`)."""
