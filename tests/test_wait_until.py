"""``hookd.daemonproc.wait_until``'s polling, on a fake clock: the waits between polls (10 ms
first growing by 1.25 up to 100 ms; a given interval fixed, or growing up to ``max_interval``),
the last wait cut at the deadline, the timeout's message; and tests/e2e/drivers.py's wrapper
(50 ms first growing to 250 ms). The module's ``time`` is replaced by :class:`FakeClock`, so
nothing here sleeps."""

from __future__ import annotations

from typing import Any

import pytest

from hookd import daemonproc
from hookd.daemonproc import wait_until

from .e2e import drivers

pytestmark = pytest.mark.inproc


class FakeClock:
    """Stands for the ``time`` module in hookd.daemonproc: ``monotonic()`` is ``now``, which
    only ``sleep(s)`` moves (each wait recorded in ``sleeps``)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        assert s >= 0, s
        self.sleeps.append(s)
        self.now += s


class Polls:
    """A predicate false until its ``n``-th call, which returns ``value``; ``calls`` counts."""

    def __init__(self, n: int, value: Any = "done") -> None:
        self.n, self.value, self.calls = n, value, 0

    def __call__(self) -> Any:
        self.calls += 1
        return self.value if self.calls >= self.n else None


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    c = FakeClock()
    monkeypatch.setattr(daemonproc, "time", c)
    return c


# 10 ms, then each wait 1.25 times the last, up to 100 ms
DEFAULT_WAITS = [0.01, 0.0125, 0.015625, 0.01953125, 0.0244140625, 0.030517578125, 0.03814697265625,
                 0.0476837158203125, 0.059604644775390625, 0.07450580596923828, 0.09313225746154785,
                 0.1, 0.1, 0.1]


def test_a_condition_met_at_once_is_returned_without_a_wait(clock: FakeClock) -> None:
    value = {"id": 7}
    assert wait_until(Polls(1, value), 5) is value
    assert clock.sleeps == []


def test_with_no_interval_the_waits_grow_from_10_ms_by_a_quarter_up_to_100_ms(clock: FakeClock) -> None:
    p = Polls(len(DEFAULT_WAITS) + 1, 42)
    assert wait_until(p, 60) == 42
    assert p.calls == len(DEFAULT_WAITS) + 1
    assert clock.sleeps == pytest.approx(DEFAULT_WAITS, rel=1e-12)


def test_a_given_interval_stays_fixed(clock: FakeClock) -> None:
    assert wait_until(Polls(6), 60, 0.05) == "done"
    assert clock.sleeps == [0.05] * 5


def test_max_interval_grows_from_the_interval(clock: FakeClock) -> None:
    assert wait_until(Polls(11), 60, 0.05, max_interval=0.25) == "done"
    assert clock.sleeps == pytest.approx([0.05, 0.0625, 0.078125, 0.09765625, 0.1220703125, 0.152587890625,
                                          0.19073486328125, 0.2384185791015625, 0.25, 0.25], rel=1e-12)


def test_a_max_interval_below_the_interval_keeps_the_interval(clock: FakeClock) -> None:
    assert wait_until(Polls(4), 60, 0.5, max_interval=0.25) == "done"
    assert clock.sleeps == [0.5] * 3


def test_the_timeout_cuts_the_last_wait_polls_once_more_and_names_what(clock: FakeClock) -> None:
    """(Binary fractions, so that the fake clock meets the deadline exactly.)"""
    p = Polls(100)
    with pytest.raises(TimeoutError) as e:
        wait_until(p, 1.0, 0.375, "the daemon's socket")
    assert str(e.value) == "timed out after 1.0 s waiting for the daemon's socket"
    assert clock.sleeps == [0.375, 0.375, 0.25]  # the last cut at the deadline
    assert p.calls == 4  # one look at the deadline before giving up


def test_the_timeout_message_default_and_callable(clock: FakeClock) -> None:
    with pytest.raises(TimeoutError) as e:
        wait_until(Polls(100), 0.5, 0.25)
    assert str(e.value) == "timed out after 0.5 s waiting for condition"
    told: list[int] = []

    def what() -> str:  # asked only once the time is up (it may be a costly description)
        told.append(1)
        return "b1's lane: working"

    assert wait_until(Polls(3), 0.5, 0.125, what) == "done" and told == []
    clock.sleeps.clear()
    with pytest.raises(TimeoutError) as e:
        wait_until(Polls(100), 2, what=what)
    assert str(e.value) == "timed out after 2 s waiting for b1's lane: working" and told == [1]
    assert sum(clock.sleeps) == pytest.approx(2)  # waited out the whole timeout, no more


def test_the_e2e_drivers_wait_grows_from_50_ms_to_250_ms(clock: FakeClock) -> None:
    assert drivers.wait_until(Polls(11), 60) == "done"
    assert clock.sleeps == pytest.approx([0.05, 0.0625, 0.078125, 0.09765625, 0.1220703125, 0.152587890625,
                                          0.19073486328125, 0.2384185791015625, 0.25, 0.25], rel=1e-12)
    clock.sleeps.clear()
    with pytest.raises(TimeoutError, match=r"^timed out after 1 s waiting for the pane's prompt$"):
        drivers.wait_until(Polls(100), 1, 0.5, "the pane's prompt")  # above 250 ms: fixed
    assert clock.sleeps == [0.5, 0.5]
