#!/usr/bin/env bash
# Runs test_kiln.py under the project's venv with the package as built in the
# build tree, or, with PACKAGE_PARENT "installed", as pip installed it in the
# venv. Never PATH's python3 (it may lack numpy, or be another version than the
# one the extension was built for).
#
# usage: run_tests.sh VENV_PYTHON PACKAGE_PARENT MODELS_DIR TEST_FILE GUIDE_PAGE
set -euo pipefail
python=$1
package_parent=$2
export KILN_PYTHON_TEST_MODELS=$3
test_file=$4
export KILN_PYTHON_GUIDE=$5  # docs/guide/python.md: its python blocks run too

if [ ! -x "$python" ]; then
  echo "SKIP: no project venv python at $python (scripts/setup_venv.sh makes it)"
  exit 77
fi
cd "$(dirname "$test_file")"  # python/tests: no kiln/ folder here to shadow the package
if [ "$package_parent" = installed ]; then
  # The package pip installed into the venv (make python-package), not the build tree's.
  unset PYTHONPATH
  if ! "$python" -c "import kiln" 2> /dev/null; then
    echo "SKIP: no kiln package installed in the venv of $python (make python-package installs it)"
    exit 77
  fi
  export KILN_PYTHON_INSTALLED=1  # test_kiln.py checks where kiln comes from and that it has the compiler
else
  if ! compgen -G "$package_parent/kiln/_kiln*.so" > /dev/null; then
    echo "SKIP: the kiln package is not built in $package_parent (ninja kiln_python builds it)"
    exit 77
  fi
  export PYTHONPATH=$package_parent
fi
exec "$python" -m unittest -v "$(basename "$test_file" .py)"
