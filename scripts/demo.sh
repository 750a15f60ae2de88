#!/usr/bin/env bash
# make demo: compile examples/mlp.relax and run it on deterministic inputs.
set -euo pipefail
build=${1:-build}
out="$build/demo"
mkdir -p "$out"

echo "== kiln-compile examples/mlp.relax -o $out/mlp.vmfb"
"$build/tools/kiln-compile/kiln-compile" examples/mlp.relax -o "$out/mlp.vmfb"

# Inputs: a batch of 4 images and the weights, filled deterministically
# (kiln-run's random:SEED generator, identical on every machine).
inputs=(
  --input=4x784xf32=random:1
  --input=128x784xf32=random:2
  --input=128xf32=random:3
  --input=10x128xf32=random:4
  --input=10xf32=random:5
)
echo "== kiln-run $out/mlp.vmfb (batch 4)"
"$build/tools/kiln-run/kiln-run" "$out/mlp.vmfb" --function=main "${inputs[@]}" --repeat=200

# The transformer block of examples/: a symbolic sequence length (here 17),
# kernels fused by the compiler, memory planned statically from the bound
# s <= 128 the function declares.
echo "== kiln-compile examples/transformer_block.relax -o $out/transformer.vmfb --report-memory"
"$build/tools/kiln-compile/kiln-compile" examples/transformer_block.relax -o "$out/transformer.vmfb" --report-memory
tinputs=(--input=17x64xf32=random:1)
seed=2
for shape in 64 64 64x64 64x64 64x64 64x64 64 64 64 64x256 256 256x64 64; do
  tinputs+=("--input=${shape}xf32=random:$seed")
  seed=$((seed + 1))
done
echo "== kiln-run $out/transformer.vmfb (sequence length 17)"
"$build/tools/kiln-run/kiln-run" "$out/transformer.vmfb" --function=main "${tinputs[@]}" --repeat=50
