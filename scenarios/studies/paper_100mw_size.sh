#!/usr/bin/env bash
# The paper_100mw study in size mode (docs/studies.md §7): instead of the 24-design grid of
# paper_100mw.sh, `facility sweep --mode size` sizes the rack storage exactly (extendable, the
# LP's optimum + a verification run) under each utility spec of models/specs/, for the study's
# square wave and for the same job with jittered iterations (the `stochastic` workload, which
# repeats nowhere: the interior-point strategy). Band peak limits (ieso_2026, lipa) are rows
# of every strategy; the in-band energy share (paper_example, a verification row) is sized
# on the square wave only. Each sizing gets 300 s (optimize.time_limit_s).
# Usage: scenarios/studies/paper_100mw_size.sh [OUT_DIR] [extra sweep flags, e.g. --executor dask]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-out/study_paper_100mw_size}"
shift || true
common=(--mode size --set rack_storage.enabled=true --set rack_storage.extendable=true
        --set rack_storage.max_p_rated_mw=100 --set rack_storage.max_e_rated_mwh=1
        --set controller.kind=optimal --set optimize.annualize=true --set optimize.time_limit_s=300)
# a failed case (exit 1) does not stop the second sweep; the script exits with the worst status
rc=0
python -m facility.sweep "$here/paper_100mw.toml" "${common[@]}" \
  --set spec=caiso_2026_straw,ercot_2026_proposal,ieso_2026,lipa,paper_example \
  --out "$out/square" "$@" || rc=$?
python -m facility.sweep "$here/paper_100mw.toml" "${common[@]}" \
  --set spec=caiso_2026_straw,ercot_2026_proposal,ieso_2026,lipa --set jobs.0.workload=stochastic \
  --out "$out/stochastic" "$@" || { s=$?; (( s > rc )) && rc=$s; }
exit "$rc"
