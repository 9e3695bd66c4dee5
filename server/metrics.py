"""Latency histograms for ``/metrics`` (Prometheus text format), kept by the server process.

Two are kept: how long the server takes to handle a command (from the frame read off the socket
to every answer and broadcast it causes written to the sockets), and how late the event loop
wakes for its clock tick (the time a command can wait before the server even reads it, garbage
collection pauses included).  A client's round trip adds the network to these two.
"""

from __future__ import annotations

import bisect
import gc
import time
from collections.abc import Sequence

BUCKETS: tuple[float, ...] = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
)  # fmt: skip
"""Upper bounds in seconds: Prometheus' default buckets, and finer ones below 5 ms."""


class Histogram:
    """A Prometheus histogram: counts per bucket (cumulative when written), sum and count."""

    __slots__ = ("bounds", "count", "counts", "help", "name", "sum")

    def __init__(self, name: str, help: str, bounds: Sequence[float] = BUCKETS) -> None:
        self.name = name
        self.help = help
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf
        self.count = 0
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, seconds)] += 1
        self.count += 1
        self.sum += seconds

    def lines(self) -> list[str]:
        out = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        seen = 0
        for bound, n in zip(self.bounds, self.counts, strict=False):
            seen += n
            out.append(f'{self.name}_bucket{{le="{bound:g}"}} {seen}')
        out.append(f'{self.name}_bucket{{le="+Inf"}} {self.count}')
        out.append(f"{self.name}_sum {self.sum:.6f}")
        out.append(f"{self.name}_count {self.count}")
        return out


class GcPauses:
    """Times every garbage collection into a histogram, while attached (a collection
    stops every connection of the process: its pauses are part of the server's latency)."""

    def __init__(self) -> None:
        self.histogram = Histogram(
            "patience_race_gc_pause_seconds",
            "How long each garbage collection paused the process.",
        )
        self._started = 0.0

    def attach(self) -> None:
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)

    def detach(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self._started:
            self.histogram.observe(time.perf_counter() - self._started)
            self._started = 0.0


def gc_lines(frozen: int) -> list[str]:
    """The garbage collector's own counts, per generation (cheap: no callback on the hot path),
    and ``frozen``, the objects frozen at start-up (counted then: counting them walks them all,
    10 ms a call on a server just started, and a scraper may call as often as it likes)."""
    out = [
        "# HELP patience_race_gc_collections_total Garbage collections, by generation.",
        "# TYPE patience_race_gc_collections_total counter",
    ]
    stats = gc.get_stats()
    for gen, s in enumerate(stats):
        out.append(f'patience_race_gc_collections_total{{generation="{gen}"}} {s["collections"]}')
    out += [
        "# HELP patience_race_gc_collected_total Objects the garbage collector freed, by generation.",
        "# TYPE patience_race_gc_collected_total counter",
    ]
    for gen, s in enumerate(stats):
        out.append(f'patience_race_gc_collected_total{{generation="{gen}"}} {s["collected"]}')
    out += [
        "# HELP patience_race_gc_frozen_objects Objects frozen at start-up, never walked again.",
        "# TYPE patience_race_gc_frozen_objects gauge",
        f"patience_race_gc_frozen_objects {frozen}",
    ]
    return out
