#!/usr/bin/env bash
# The crash study (docs/failures.md): `facility size` of a BESS that keeps a ~100 MW site
# compliant through a whole-job crash, under the time-domain limits of each bundled spec
# (perfect-foresight sizing, controller.kind = optimal, verified), then the table with the
# hand figures (with and without foresight) by crash_100mw_report.py.
# The spectral-only specs (lipa, paper_example) and IESO's band peak need 5 ms steps over the
# minutes a compliant fall takes (> 100,000 steps): not sized here (docs/failures.md).
# Usage: scenarios/studies/crash_100mw.sh [OUT_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-out/study_crash_100mw}"
common=(--set bess.enabled=true --set bess.extendable=true --set controller.kind=optimal)
rc=0
size() {   # case name, then --set flags of its spec
  local name="$1"; shift
  python -m facility size "$here/crash_100mw.toml" "${common[@]}" "$@" --out "$out/$name" \
    --force --no-plots --no-progress || { s=$?; (( s > rc )) && rc=$s; }
}
size caiso_2026_straw --set spec=caiso_2026_straw
size ercot_2026_proposal --set spec=ercot_2026_proposal
# IESO v3.0's time-domain limits (20 MW/min and 5 MW over any 15 s) without its band peak
size ieso_2026_time_domain --set spec.max_window_swing_mw=5 --set spec.window_s=15
python "$here/crash_100mw_report.py" "$out"
exit "$rc"
