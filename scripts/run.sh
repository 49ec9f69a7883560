#!/usr/bin/env bash
# Install the app's requirements and start it on http://localhost:8501
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -r requirements.txt
exec python3 -m streamlit run server.py "$@"  # server.py serves app.py, warmed up
