"""hookd's core: turns hook payloads into durable records and events, as small components
composed by one facade, :class:`hookd.core.facade.Hookd` (docs/architecture.md "The core")."""

from hookd.core.bus import EventBus
from hookd.core.facade import Hookd
from hookd.core.ingest import HookResult

__all__ = ["EventBus", "HookResult", "Hookd"]
