#!/bin/sh
# Entry point of the app image.
#   (no arguments)            start the service: `node src/main.ts` (primary + WORKERS workers)
#   sh | bash | node ...      run that program (debugging)
#   anything else             a CLI command: `node src/cli/main.ts "$@"`, e.g.
#                             docker compose run --rm app admin:create --help
set -eu
cd "$(dirname "$0")/.."

if [ "$#" -eq 0 ]; then
  exec node src/main.ts
fi
case "$1" in
  sh | bash | node) exec "$@" ;;
  *) exec node src/cli/main.ts "$@" ;;
esac
