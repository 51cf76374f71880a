"""FFT-bin monitor backstop (the paper §IV-E): sliding-window spectrum of the PCC power and a
tiered response.

Every ``monitor.every_s`` the monitor takes the last ``monitor.window_s`` of PCC power,
removes its mean and computes the single-sided amplitude spectrum
``A_k = 2 |X_k| / N`` (k >= 1; the same bin amplitude as the ``band_peak_mw`` metric). A band
violates when its largest bin exceeds its limit: ``[spec.band_min_hz, spec.band_max_hz]``
against ``spec.max_band_peak_mw`` and every ``spec.bands`` entry against its ``max_peak_mw``.

Tiers (each change is an event with its time):

0. normal;
1. soft throttle / load shaping on the first violation: the drawn load keeps only
   ``1 - throttle_frac`` of its swing around its mean over the last window;
2. shedding when a violation persists ``shed_after_s`` after the throttle started:
   ``shed_frac`` of the site load is disconnected (on top of the throttle).

The response steps down one tier when every band peak stayed below
``release_frac`` x its limit for ``release_after_s``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from facility.errors import ScenarioError

__all__ = ["BandLimit", "band_limits", "band_peaks_mw", "MonitorPolicy"]


@dataclass(frozen=True)
class BandLimit:
    """One spectral limit: largest bin amplitude in [min_hz, max_hz] at most max_peak_mw."""

    name: str
    min_hz: float
    max_hz: float
    max_peak_mw: float


def band_limits(spec) -> list[BandLimit]:
    """The band limits of a :class:`~facility.config.schema.SpecConfig` the monitor enforces."""
    out = []
    if spec.max_band_peak_mw is not None:
        out.append(BandLimit("band", spec.band_min_hz, spec.band_max_hz, spec.max_band_peak_mw))
    for b in spec.bands:
        out.append(BandLimit(b.name, b.min_hz, b.max_hz, b.max_peak_mw))
    return out


def band_peaks_mw(p_mw: np.ndarray, dt_s: float, limits: list[BandLimit]) -> tuple[np.ndarray, np.ndarray]:
    """Largest single-sided FFT-bin amplitude in each band.

    Parameters
    ----------
    p_mw : array_like (N,)
        Power window. [MW]
    dt_s : float
        Step. [s]
    limits : list of BandLimit
        Bands.

    Returns
    -------
    peak_mw : numpy.ndarray (B,)
        Largest ``2 |X_k| / N`` with f_k in the band (0 if no bin falls in it). [MW]
    freq_hz : numpy.ndarray (B,)
        Frequency of that bin. [Hz]
    """
    x = np.asarray(p_mw, dtype=float)
    n = x.size
    amp = 2.0 * np.abs(np.fft.rfft(x - x.mean())) / n
    f, sels = _band_bins(n, float(dt_s), tuple((b.min_hz, b.max_hz) for b in limits))
    peak = np.zeros(len(limits))
    freq = np.zeros(len(limits))
    for j, sel in enumerate(sels):
        if sel.size:
            k = sel[np.argmax(amp[sel])]
            peak[j], freq[j] = amp[k], f[k]
    return peak, freq


@lru_cache(maxsize=32)
def _band_bins(n: int, dt_s: float, bands: tuple) -> tuple[np.ndarray, list]:
    """Bin frequencies of an n-point window and the bins inside each band (cached)."""
    f = np.fft.rfftfreq(n, dt_s)
    return f, [np.flatnonzero((f >= lo) & (f <= hi) & (f > 0)) for lo, hi in bands]


@dataclass
class MonitorPolicy:
    """Tier state machine of the monitor.

    Parameters
    ----------
    cfg : facility.config.schema.MonitorConfig
        Monitor settings.
    spec : facility.config.schema.SpecConfig
        Limits.
    dt_s : float
        Simulation step. [s]
    """

    cfg: object
    spec: object
    dt_s: float
    limits: list = field(init=False)
    tier: int = field(init=False, default=0)
    violating_since_s: float | None = field(init=False, default=None)
    tier_since_s: float = field(init=False, default=0.0)
    quiet_since_s: float | None = field(init=False, default=None)
    n_window: int = field(init=False)

    def __post_init__(self) -> None:
        self.limits = band_limits(self.spec)
        if not self.limits:
            raise ScenarioError(
                "monitor.enabled = true needs a spectral limit to watch: set spec.max_band_peak_mw "
                "[MW] or add spec.bands")
        self.n_window = max(2, int(round(self.cfg.window_s / self.dt_s)))
        for b in self.limits:
            if b.max_hz > 0.5 / self.dt_s:
                raise ScenarioError(
                    f"spec band {b.name!r} reaches {b.max_hz:g} Hz, above the Nyquist frequency "
                    f"{0.5 / self.dt_s:g} Hz of time.dt_s = {self.dt_s:g} s; the monitor cannot see it")

    @property
    def release_after_s(self) -> float:
        """Quiet time before the response steps down one tier. [s]"""
        r = self.cfg.release_after_s
        return self.cfg.window_s if r is None else r

    def modifiers(self, mean_mw: float) -> tuple[float, float, float]:
        """Load modifiers ``(keep, throttle, mean)`` of the current tier for the kernel."""
        if self.tier == 0:
            return 1.0, 0.0, 0.0
        keep = 1.0 - self.cfg.shed_frac if self.tier >= 2 else 1.0
        return keep, self.cfg.throttle_frac, mean_mw

    def evaluate(self, t_s: float, p_pcc_window_mw: np.ndarray) -> list[dict]:
        """Look at one window ending at ``t_s`` and update the tier.

        Returns
        -------
        list of dict
            Events (``t_s``, ``kind``, ``detail``, ``band``, ``freq_hz``, ``peak_mw``,
            ``limit_mw``) of the tier changes.
        """
        peaks, freqs = band_peaks_mw(p_pcc_window_mw, self.dt_s, self.limits)
        lim = np.array([b.max_peak_mw for b in self.limits])
        ratio = peaks / lim
        j = int(np.argmax(ratio))
        b = self.limits[j]
        info = {"band": b.name, "freq_hz": float(freqs[j]), "peak_mw": float(peaks[j]),
                "limit_mw": float(b.max_peak_mw)}
        what = (f"band {b.name!r} [{b.min_hz:g}, {b.max_hz:g}] Hz: bin at {freqs[j]:.3g} Hz has "
                f"{peaks[j]:.3g} MW against a limit of {b.max_peak_mw:g} MW")
        events = []
        if ratio[j] > 1.0:
            self.quiet_since_s = None
            if self.violating_since_s is None:
                self.violating_since_s = t_s
            if self.tier == 0:
                self.tier, self.tier_since_s = 1, t_s
                events.append({"t_s": t_s, "kind": "monitor_throttle",
                               "detail": f"{what}; soft throttle removes "
                                         f"{self.cfg.throttle_frac:.0%} of the swing", **info})
            elif self.tier == 1 and t_s - self.tier_since_s >= self.cfg.shed_after_s:
                self.tier, self.tier_since_s = 2, t_s
                events.append({"t_s": t_s, "kind": "monitor_shed",
                               "detail": f"{what} for {t_s - self.violating_since_s:.3g} s; "
                                         f"shedding {self.cfg.shed_frac:.0%} of the site load",
                               **info})
        else:
            self.violating_since_s = None
            if ratio[j] <= self.cfg.release_frac:
                if self.quiet_since_s is None:
                    self.quiet_since_s = t_s
                if self.tier > 0 and t_s - self.quiet_since_s >= self.release_after_s:
                    self.tier -= 1
                    self.tier_since_s = t_s
                    self.quiet_since_s = t_s
                    events.append({"t_s": t_s, "kind": "monitor_release",
                                   "detail": f"{what}; stepping down to tier {self.tier}", **info})
            else:
                self.quiet_since_s = None
        return events
