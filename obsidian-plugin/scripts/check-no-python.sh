#!/bin/sh
# `npm test` without a Python that has vaultlens: exits non-zero with one clear message naming the
# fix, not vitest's unrelated "No test files found" under a stack trace (run by `make plugin`).
set -u
cd "$(dirname "$0")/.."
pythons=/nonexistent/python
bare=$(command -v python3 || true)  # a Python without vaultlens, where there is one
if [ -n "$bare" ] && ! PYTHONPATH= "$bare" -c "import vaultlens" 2>/dev/null; then pythons="$pythons $bare"; fi
for python in $pythons; do
  if out=$(VAULTLENS_PYTHON="$python" PYTHONPATH= npx vitest run 2>&1); then
    echo "npm test passed with VAULTLENS_PYTHON=$python, which has no vaultlens"; exit 1
  fi
  echo "$out" | grep -q "The plugin tests need a Python with vaultlens installed; $python" \
    || { echo "$out"; echo "FAIL: no clear message for $python"; exit 1; }
  if echo "$out" | grep -q -e "No test files found" -e "Unhandled Error"; then
    echo "$out"; echo "FAIL: vitest noise for $python"; exit 1
  fi
done
echo "ok: npm test without a Python that has vaultlens says so, alone, and fails"
