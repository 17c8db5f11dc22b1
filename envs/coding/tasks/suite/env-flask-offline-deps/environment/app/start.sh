#!/bin/sh
set -e
cd "$(dirname "$0")"
pip install -r requirements.txt
exec gunicorn --workers 2 --bind 0.0.0.0:8000 wsgi:app
