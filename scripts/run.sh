#!/usr/bin/env bash
# Install the app's requirements and start it on http://localhost:8501
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -r requirements.txt
# Bytecode for tfviz, which Python would write on its first import anyway; our machines set
# PYTHONDONTWRITEBYTECODE=1, so every start compiled it again: 0.2 s of the first page.
python3 -m compileall -q tfviz
exec python3 -m streamlit run server.py "$@"  # server.py serves app.py, warmed up
