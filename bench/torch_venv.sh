# torch_venv.sh: sourced by the CPU benchmarks beside PyTorch, from the
# repository root.  Sets VENV to build/torch-venv with PyTorch installed
# (from the Python package index; its wheel brings the CUDA libraries it
# needs to import, even on a CPU), and makes build/assoc if it is missing.
VENV=build/torch-venv
if [ ! -x $VENV/bin/python ] || ! $VENV/bin/python -c 'import torch' 2>/dev/null; then
	python3 -m venv $VENV
	$VENV/bin/pip install -q numpy
	$VENV/bin/pip install -q torch
fi
[ -x build/assoc ] || make build/assoc >/dev/null
