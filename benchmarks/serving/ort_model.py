"""Triton Python-backend model running ONNX Runtime: the serving benchmark's baseline.

The same shape of model as Kiln's (kiln/triton/model.py): one InferenceSession per
instance, created once; a batch of requests concatenated along dim 0 and answered with one
run, outputs split back. ``ort_threads`` (config parameter) sets intra-op threads.
"""
import json
import os

import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        parameters = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(parameters.get("ort_threads", "1"))
        options.inter_op_num_threads = 1
        path = os.path.join(args["model_repository"], args["model_version"], "model.onnx")
        self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.input_names = [i["name"] for i in config["input"]]
        self.output_names = [o["name"] for o in config["output"]]

    def execute(self, requests):
        per_request = [[pb_utils.get_input_tensor_by_name(r, n).as_numpy() for n in self.input_names]
                       for r in requests]
        sizes = [arrays[0].shape[0] for arrays in per_request]
        feed = {n: np.concatenate([arrays[i] for arrays in per_request]) for i, n in enumerate(self.input_names)}
        outputs = self.session.run(self.output_names, feed)
        responses, start = [], 0
        for size in sizes:
            responses.append(pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor(n, o[start:start + size]) for n, o in zip(self.output_names, outputs)]))
            start += size
        return responses
