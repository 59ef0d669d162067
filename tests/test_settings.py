"""hookd.settings: every daemon tunable resolved once from a mapping, refused when malformed."""

import pytest

from hookd.models import ConfigError
from hookd.settings import Settings

pytestmark = pytest.mark.inproc


def test_defaults_when_nothing_is_set():
    assert Settings.from_env({}) == Settings()
    assert Settings().group_commit and Settings().fastpath and not Settings().hook_timings


def test_each_variable_reaches_its_field():
    s = Settings.from_env({
        "HOOKD_REDELIVER_AFTER_S": "7.5", "HOOKD_LIVENESS_S": "0.25", "HOOKD_QUIET_IDLE_S": "3",
        "HOOKD_GROUP_COMMIT": "0", "HOOKD_BUSY_WAIT_S": "0.5", "HOOKD_BODY_TIMEOUT_S": "4",
        "HOOKD_FASTPATH": "0", "HOOKD_HOOK_TIMINGS": "1", "HOOKD_TAIL_DEBOUNCE_MS": "5",
        "HOOKD_TAIL_STEP_MS": "2", "HOOKD_WATCH_BACKEND": " WatchFiles ", "HOOKD_TAIL_QUIET_MS": "50",
        "HOOKD_TAIL_MAX_DEFER_MS": "60000",
    })
    assert s == Settings(redeliver_after_s=7.5, liveness_s=0.25, quiet_idle_s=3.0, group_commit=False,
                         busy_wait_s=0.5, body_timeout_s=4.0, fastpath=False, hook_timings=True,
                         tail_debounce_ms=5, tail_step_ms=2, watch_backend="watchfiles", tail_quiet_ms=50,
                         tail_max_defer_ms=60000)


@pytest.mark.parametrize("name,text", [
    ("HOOKD_LIVENESS_S", "0"), ("HOOKD_LIVENESS_S", "-1"), ("HOOKD_LIVENESS_S", "nan"),
    ("HOOKD_LIVENESS_S", "inf"), ("HOOKD_LIVENESS_S", "soon"), ("HOOKD_TAIL_STEP_MS", "2.5"),
])
def test_a_malformed_number_is_refused_naming_its_variable(name, text):
    with pytest.raises(ConfigError, match=name):
        Settings.from_env({name: text})


def test_a_blank_value_means_the_default():
    assert Settings.from_env({"HOOKD_LIVENESS_S": "  "}).liveness_s == 2.0
    assert Settings.from_env({"HOOKD_REDELIVER_AFTER_S": ""}).redeliver_after_s == 300.0
