# A Python venv and pip install --no-index of local wheels. A: one library, imported.
# B: a tool whose wheel depends on the library (pip resolves it from the same folder),
# its console script run, the venv listed, the tool uninstalled.
set -eu
python3 -m venv --system-site-packages --without-pip venv
pip="venv/bin/python -m pip --disable-pip-version-check --no-cache-dir -q"
if [ "$1" = A ]; then
    $pip install --no-index --find-links wheels demo-greet
    venv/bin/python -c "import demo_greet; print(demo_greet.greet('A'))"
else
    $pip install --no-index --find-links wheels demo-cli
    venv/bin/demo-hello B
    venv/bin/python -m pip --disable-pip-version-check list --local --format freeze
    $pip uninstall -y demo-cli
    venv/bin/python -c "import importlib.util as u; print(u.find_spec('demo_cli'))"
fi
