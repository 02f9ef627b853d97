#!/bin/sh
# ctest's entry to a server test: runs SCRIPT with .venv-client's python
# (scripts/venv-client.sh), or skips (77) when that venv is not there.
#   tests/server/run.sh SCRIPT ARGS...
root=$(cd "$(dirname "$0")/../.." && pwd)
py="$root/.venv-client/bin/python"
if [ ! -x "$py" ]; then
  echo "skip: no .venv-client (scripts/venv-client.sh makes it)"
  exit 77
fi
exec "$py" "$@"
