#!/usr/bin/env bash
# The paper_100mw study (docs/studies.md): 24 designs (GPU floor x rack storage, in the cases
# CSV) x the 5 utility specs of models/specs/ = 120 runs of 2 min at 5 ms.
# Usage: scenarios/studies/paper_100mw.sh [OUT_DIR] [extra sweep flags, e.g. --executor dask]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-out/study_paper_100mw}"
shift || true
python -m facility.sweep "$here/paper_100mw.toml" \
  --cases "$here/paper_100mw_cases.csv" \
  --set spec=caiso_2026_straw,ercot_2026_proposal,ieso_2026,lipa,paper_example \
  --out "$out" "$@"
