"""Writes the ONNX Runtime quantize_dynamic form of a model: its MatMul weights as int8 constants,
its activations quantized when the program runs (DynamicQuantizeLinear -> MatMulInteger -> Cast ->
Mul), the form in which quantized transformers usually ship. Kiln's benchmarks of the integer
operators run on such a copy of a corpus model (the corpus has no model with integer operators).

    build/venv/bin/python benchmarks/quantize_dynamic_model.py IN.onnx OUT.onnx

Weights computed in the graph (minilm_l6_int8's int8 constants cast and scaled) are folded to
initializers first (ONNX Runtime's basic graph optimizations), so that quantize_dynamic sees them.
"""
import os
import sys
import tempfile

import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    src, dst = argv
    with tempfile.TemporaryDirectory() as d:
        folded = os.path.join(d, "folded.onnx")
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        so.optimized_model_filepath = folded
        ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
        quantize_dynamic(folded, dst, weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
